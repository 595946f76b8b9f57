package kubernetes

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// The shape of a mode's pod follows the policy: the network left to every
// mode (network: true) gets no NetworkPolicy and says so; the
// service-account token mounted when asked, and said; processes 0 (no
// bound asked) is not reported as a limit not applied; each mode's root,
// workspace and facts.
func TestAPodsShapeFollowsThePolicy(t *testing.T) {
	zero := int64(0)
	s := Settings{Image: "i", ServiceAccountToken: true, Workspace: &Workspace{MountPath: "/w/"},
		SandboxPolicy: pluginapi.SandboxPolicy{Network: true, Limits: pluginapi.SandboxLimits{Processes: &zero, TmpMiB: &zero}}}
	for _, mode := range modes {
		sh := podShape(s, mode)
		ctr := sh.pod.Spec.Containers[0]
		if sh.denyNetwork {
			t.Errorf("%s: a policy with network: true denies it", mode)
		}
		if slices.ContainsFunc(sh.facts.Enforced, func(e string) bool { return strings.Contains(e, "NetworkPolicy") }) {
			t.Errorf("%s: facts %q name a NetworkPolicy the pod does not have", mode, sh.facts.Enforced)
		}
		if a := sh.pod.Spec.AutomountServiceAccountToken; a == nil || !*a || !slices.Contains(sh.facts.Enforced, "service-account token: mounted (shell.serviceAccountToken)") {
			t.Errorf("%s: the token asked for: automount %v, facts %q", mode, a, sh.facts.Enforced)
		}
		if slices.Contains(sh.facts.Enforced, processesFact) {
			t.Errorf("%s: facts %q report a processes limit not applied, where none was asked", mode, sh.facts.Enforced)
		}
		if !slices.Contains(sh.facts.Limits, "/tmp not bounded (an emptyDir on the node's disk)") {
			t.Errorf("%s: limits %q; want /tmp unbounded (tmpMiB 0)", mode, sh.facts.Limits)
		}
		if ctr.WorkingDir != "/w/" || sh.workspaceDir != "/w" {
			t.Errorf("%s: workdir %q, workspace %q", mode, ctr.WorkingDir, sh.workspaceDir)
		}
		if ro := *ctr.SecurityContext.ReadOnlyRootFilesystem; ro != (mode != pluginapi.SandboxDangerFullAccess) {
			t.Errorf("%s: readOnlyRootFilesystem %v", mode, ro)
		}
		if sh.pod.Labels[labelMode] != string(mode) {
			t.Errorf("%s: the pod's mode label: %q", mode, sh.pod.Labels[labelMode])
		}
	}
	// Without network, the sandboxed modes deny it (a fact the executor
	// does not enforce) and tell package managers not to retry;
	// danger-full-access does neither.
	s.SandboxPolicy.Network = false
	for _, mode := range modes {
		sh := podShape(s, mode)
		if sh.denyNetwork != (mode != pluginapi.SandboxDangerFullAccess) ||
			slices.Contains(sh.facts.NotEnforced, networkFact) != sh.denyNetwork || slices.Contains(sh.facts.Enforced, networkFact) {
			t.Errorf("%s: denies the network: %v, facts %q, not enforced %q", mode, sh.denyNetwork, sh.facts.Enforced, sh.facts.NotEnforced)
		}
		env := sh.pod.Spec.Containers[0].Env
		if offline := slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == "PIP_RETRIES" && e.Value == "1" }); offline != sh.denyNetwork {
			t.Errorf("%s: the container's variables %v: PIP_RETRIES=1 %v; want %v", mode, env, offline, sh.denyNetwork)
		}
	}
}
