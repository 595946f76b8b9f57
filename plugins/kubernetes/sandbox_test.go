package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// sandboxed registers, after cluster's own check, one that no
// NetworkPolicy is left in the namespace once the test's executors are
// closed.
func sandboxed(t *testing.T) *testCluster {
	t.Helper()
	c := cluster(t)
	t.Cleanup(func() { c.requireNoPolicies(t) })
	return c
}

func (c *testCluster) requireNoPolicies(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nps := c.cs.NetworkingV1().NetworkPolicies(c.namespace)
	list, err := nps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing the NetworkPolicies left: %v", err)
		return
	}
	for _, np := range list.Items {
		t.Errorf("NetworkPolicy %s is still on the cluster after its executor closed", np.Name)
		_ = nps.Delete(ctx, np.Name, metav1.DeleteOptions{})
	}
}

// podsOf are this plugin's pods, by the mode they have the shape of.
func (c *testCluster) podsOf(t *testing.T) map[pluginapi.SandboxMode]corev1.Pod {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "dsh-host.dev/executor=kubernetes,dsh-host.dev/plugin=" + kubernetes.PluginLabel(),
	})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[pluginapi.SandboxMode]corev1.Pod{}
	for _, p := range list.Items {
		pods[pluginapi.SandboxMode(p.Labels["dsh-host.dev/mode"])] = p
	}
	return pods
}

// probe says, in the pod, what a command can write, whether it has a
// service-account token, its capabilities, no-new-privileges and seccomp
// state, whether it can make a set-id file (which a node's users could
// run from the workspace's volume), and where it starts.
const probe = `touch /probe 2>/dev/null && echo root=writable || echo root=read-only
touch /work/probe 2>/dev/null && echo workspace=writable || echo workspace=read-only
test -e /var/run/secrets/kubernetes.io/serviceaccount/token && echo token=mounted || echo token=none
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | tr -d ' \t'
touch /tmp/setid; chmod u+s,g+s /tmp/setid 2>/dev/null; test -u /tmp/setid -o -g /tmp/setid && echo setid=made || echo setid=refused
echo pwd=$(pwd)`

// Each mode a command asks for runs in a pod of that mode's shape: a
// read-only root in read-only and workspace-write, the workspace read-only
// in read-only, no service-account token, every capability dropped,
// no-new-privileges, the runtime's seccomp profile, the memory limit; a
// NetworkPolicy denying all traffic to each pod of a mode without network,
// owned by it, while it runs, and gone after Close; the facts say what is
// enforced and what is not.
func TestEachModeIsAPodsShape(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	settings := c.settings(t, map[string]any{
		"image":     c.image,
		"workspace": map[string]any{"mountPath": "/work"},
		"sandboxPolicy": map[string]any{
			"defaultMode": "read-only",
			"limits":      map[string]any{"memoryMiB": 200, "tmpMiB": 64},
		},
	})
	if err := x.Configure(ctx, []byte(settings)); err != nil {
		t.Fatal(err)
	}
	if d, err := x.Describe(ctx); err != nil || d.SandboxMode != pluginapi.SandboxReadOnly || len(d.Uncontained) == 0 {
		t.Errorf("Describe: %+v, %v; want the policy's default mode, read-only, and what a pod does not contain", d, err)
	}
	want := map[pluginapi.SandboxMode][]string{
		pluginapi.SandboxReadOnly:         {"root=read-only", "workspace=read-only"},
		pluginapi.SandboxWorkspaceWrite:   {"root=read-only", "workspace=writable"},
		pluginapi.SandboxDangerFullAccess: {"root=writable", "workspace=writable"},
	}
	facts := map[pluginapi.SandboxMode]*pluginapi.SandboxFacts{}
	for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess} {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: probe, SandboxMode: mode}, nil)
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("%s: the probe: %+v, %v", mode, res, err)
		}
		lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
		for _, w := range append(want[mode], "token=none", "CapEff:0000000000000000", "NoNewPrivs:1", "Seccomp:2", "setid=refused", "pwd=/work") {
			if !slices.Contains(lines, w) {
				t.Errorf("%s: the probe says %q; want %s", mode, lines, w)
			}
		}
		if res.Sandbox == nil || res.Sandbox.Mode != mode {
			t.Fatalf("%s: the result's sandbox facts: %+v; want its mode's", mode, res.Sandbox)
		}
		facts[mode] = res.Sandbox
	}
	// The default mode is the policy's: its pod runs a command that asks
	// for none.
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "touch /work/x"}, nil)
	if err != nil || res.ExitCode == nil || *res.ExitCode == 0 || res.Sandbox == nil || res.Sandbox.Mode != pluginapi.SandboxReadOnly {
		t.Errorf("a command in the default mode: %+v, %v; want it in the read-only pod, its write refused", res, err)
	}

	pods := c.podsOf(t)
	if len(pods) != 3 {
		t.Fatalf("the executor's pods: %d; want one per mode", len(pods))
	}
	nps, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for mode, p := range pods {
		ctr := p.Spec.Containers[0]
		if got := ctr.Resources.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse("200Mi")) != 0 {
			t.Errorf("%s: the pod's memory limit: %v; want 200Mi", mode, got.String())
		}
		if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
			t.Errorf("%s: the pod's automountServiceAccountToken: %v; want false", mode, p.Spec.AutomountServiceAccountToken)
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == "dsh-tmp" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("64Mi")) != 0) {
				t.Errorf("%s: /tmp's volume: %+v; want an emptyDir of 64Mi", mode, v.VolumeSource)
			}
		}
		var policies []string
		for _, np := range nps.Items {
			sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			policies = append(policies, np.Name)
			if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 2 {
				t.Errorf("%s: NetworkPolicy %s: %+v; want ingress and egress denied (both types, no rules)", mode, np.Name, np.Spec)
			}
			if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].UID != p.UID {
				t.Errorf("%s: NetworkPolicy %s's owners: %+v; want its pod %s", mode, np.Name, np.OwnerReferences, p.Name)
			}
			for _, other := range pods {
				if other.UID != p.UID && sel.Matches(labels.Set(other.Labels)) {
					t.Errorf("%s: NetworkPolicy %s selects the pod %s too; want its pod alone", mode, np.Name, other.Name)
				}
			}
		}
		if wantPolicy := mode != pluginapi.SandboxDangerFullAccess; (len(policies) == 1) != wantPolicy || len(policies) > 1 {
			t.Errorf("%s: NetworkPolicies selecting the pod: %v; want one: %v", mode, policies, wantPolicy)
		}
	}

	for mode, f := range facts {
		sandboxedMode := mode != pluginapi.SandboxDangerFullAccess
		has := func(s string) bool { return slices.Contains(f.Enforced, s) }
		if has("read-only root file system") != sandboxedMode {
			t.Errorf("%s: facts %q: a read-only root is said: %v; want %v", mode, f.Enforced, !sandboxedMode, sandboxedMode)
		}
		for _, w := range []string{"capabilities: all dropped", "allowPrivilegeEscalation: false (no-new-privileges)",
			"seccomp: the container runtime's default profile (RuntimeDefault)", "service-account token: not mounted",
			"no set-uid or set-gid bits: refused to every command (seccomp)"} {
			if !has(w) {
				t.Errorf("%s: facts %q; want %q", mode, f.Enforced, w)
			}
		}
		// The network is denied only where the CNI enforces it: the facts
		// never list it as enforced, and say it is asked for but not
		// enforced by the executor.
		if slices.ContainsFunc(f.Enforced, func(e string) bool { return strings.HasPrefix(e, "network") && !strings.Contains(e, "not denied") }) {
			t.Errorf("%s: facts %q claim the network's denial as enforced", mode, f.Enforced)
		}
		notEnforced := func(p string) bool {
			return slices.ContainsFunc(f.NotEnforced, func(e string) bool { return strings.HasPrefix(e, p) })
		}
		if notEnforced("network denied") != sandboxedMode {
			t.Errorf("%s: facts %q: the network's denial said as not enforced by us: %v; want %v", mode, f.NotEnforced, !sandboxedMode, sandboxedMode)
		}
		if !notEnforced("processes") {
			t.Errorf("%s: facts %q; want the processes' limit said not to be applied", mode, f.NotEnforced)
		}
		if !slices.Contains(f.Limits, "memory 200 MiB (the container's memory limit)") {
			t.Errorf("%s: facts' limits %q; want the memory limit", mode, f.Limits)
		}
		if slices.Contains(f.WritableRoots, "/work") == (mode == pluginapi.SandboxReadOnly) {
			t.Errorf("%s: facts' writable roots %q: the workspace's place is wrong", mode, f.WritableRoots)
		}
		if sandboxedMode && slices.Contains(f.WritableRoots, "/") {
			t.Errorf("%s: facts' writable roots %q hold / under a read-only root", mode, f.WritableRoots)
		}
	}

	// Every place the facts list as writable is, and of the kubelet's
	// and the runtime's files in /etc only those the facts list are.
	for mode, f := range facts {
		script := ""
		for _, w := range f.WritableRoots {
			if w == "/dev/termination-log" || w == "/etc/hosts" {
				script += "echo x >> " + w + " && echo writable:" + w + "\n"
				continue
			}
			script += "touch " + w + "/.dsh-probe && echo writable:" + w + "\n"
		}
		script += "for f in /etc/hosts /etc/hostname /etc/resolv.conf; do echo >> $f && echo writable:$f; done 2>/dev/null; true"
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: script, SandboxMode: mode}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Fields(res.Stdout.Text)
		for _, w := range f.WritableRoots {
			if !slices.Contains(got, "writable:"+w) {
				t.Errorf("%s: %s is in the facts' writable roots, but not writable: %s", mode, w, res.Stderr.Text)
			}
		}
		for _, e := range []string{"/etc/hosts", "/etc/hostname", "/etc/resolv.conf"} {
			if slices.Contains(got, "writable:"+e) && !slices.Contains(f.WritableRoots, "/") && !slices.Contains(f.WritableRoots, e) {
				t.Errorf("%s: %s is writable, and the facts do not say so", mode, e)
			}
		}
	}

	if err := x.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// No policy outlives Close: Close deletes them, and so does the
	// garbage collector once their pods are gone (this test cannot tell
	// which came first; TestARuntimeClassThatDoesNotExistFails sees a
	// policy no pod owns go).
	if left, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, metav1.ListOptions{}); err != nil || len(left.Items) != 0 {
		t.Errorf("NetworkPolicies right after Close: %v, %v; want none", left, err)
	}
	// The cleanups check that no pod is left either.
}

// shell.user runs the pods as that user, non-root.
func TestAUserRunsThePodNonRoot(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "user": "1000:1001"}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo $(id -u):$(id -g)"}, nil)
	if err != nil || res.Stdout.Text != "1000:1001\n" {
		t.Fatalf("id in the pod: %+v, %v; want 1000:1001", res, err)
	}
	for _, p := range c.podsOf(t) {
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 1000 {
			t.Errorf("the pod's security context: %+v; want runAsNonRoot and runAsUser 1000", sc)
		}
	}
	if !slices.Contains(res.Sandbox.Enforced, "user: 1000:1001, runAsNonRoot (shell.user)") {
		t.Errorf("facts %q; want the user", res.Sandbox.Enforced)
	}
}

// A policy the executor cannot take is refused at Configure: writable
// roots (this machine's directories, which a pod cannot mount), a mode it
// does not know, a negative limit; and so are a user that is not numeric,
// a negative maxSessions, and pods per session for an attached pod.
func TestAPolicyAPodCannotTakeIsRefused(t *testing.T) {
	for _, tt := range []struct{ settings, want string }{
		{`{"image": "i", "sandboxPolicy": {"writableRoots": ["/srv/data"]}}`, "writableRoots"},
		{`{"image": "i", "sandboxPolicy": {"defaultMode": "full"}}`, "defaultMode"},
		{`{"image": "i", "sandboxPolicy": {"limits": {"memoryMiB": -1}}}`, "memoryMiB"},
		{`{"image": "i", "sandboxPolicy": {"bogus": 1}}`, "bogus"},
		{`{"image": "i", "user": "nobody"}`, "user"},
		{`{"pod": "p", "workspace": {"mountPath": "/w"}}`, "workspace"},
		{`{"pod": "p", "podPerSession": true}`, "podPerSession"},
		{`{"image": "i", "maxSessions": -1}`, "maxSessions"},
	} {
		x := kubernetes.New()
		err := x.Configure(t.Context(), []byte(tt.settings))
		if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("settings %s: %v; want them refused, naming %s", tt.settings, err, tt.want)
		}
		x.Close(t.Context())
	}
	x := kubernetes.New()
	defer x.Close(t.Context())
	err := x.Configure(t.Context(), []byte(`{"image": "i", "sandboxPolicy": {"writableRoots": ["/srv/data"]}}`))
	if err == nil || !strings.Contains(err.Error(), "a pod cannot mount") {
		t.Errorf("writable roots: %v; want the reason: a pod cannot mount this machine's directories", err)
	}
}

// The container executor's sandbox cases pass in pods: the modes' shapes,
// the default mode, the limits (or the facts saying which are not
// enforced), a policy refused, offline failures read as denials. The
// workspace is an emptyDir at /work; the executor takes no writable roots.
func TestSandboxCases(t *testing.T) {
	c := sandboxed(t)
	pluginapitest.RunSandbox(t, func(t *testing.T) pluginapi.ShellExecutor { return kubernetes.New() },
		pluginapitest.SandboxOptions{
			Settings:  c.settings(t, map[string]any{"image": c.image, "workspace": map[string]any{"mountPath": "/work"}}),
			Workspace: "/work",
		})
}
