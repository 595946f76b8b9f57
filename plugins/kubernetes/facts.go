package kubernetes

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// terminationLog is the kubelet's termination-message file in every
// container (corev1.TerminationMessagePathDefault).
const terminationLog = corev1.TerminationMessagePathDefault

// etcHosts is the kubelet's hosts file, mounted writable in every
// container whatever its root.
const etcHosts = "/etc/hosts"

// networkFact is the fact of a mode without network: its pod is selected
// by a NetworkPolicy denying all ingress and egress, which only a CNI
// that enforces NetworkPolicy applies (a bridge CNI, for one, does not).
// It is a fact the executor does not enforce (SandboxFacts.NotEnforced).
const networkFact = "network denied (ingress and egress) by a NetworkPolicy selecting the pod alone; " +
	"in force only where the cluster's CNI enforces NetworkPolicy, which the executor does not check"

// processesFact says why processes are not bounded per pod.
const processesFact = "processes: a pod's pids limit is the kubelet's (podPidsLimit), not the Pod API's; " +
	"sandboxPolicy.limits.processes is not applied"

// protectedFact says why the workspace has no protected paths.
const protectedFact = "protected paths: the workspace is writable throughout (no read-only paths inside it)"

// setIDFact is what the agent's --no-setid enforces in a created pod: a
// set-id file left on the workspace's volume could lend the pod's uid or
// gid to the node's users (a hostPath or local claim).
const setIDFact = "no set-uid or set-gid bits: refused to every command (seccomp)"

// shapeFacts are the sandbox facts of mode's pod, as sh lays it out.
func shapeFacts(s Settings, mode pluginapi.SandboxMode, sh shape, tmpMiB int64, uid *int64) pluginapi.SandboxFacts {
	f := pluginapi.SandboxFacts{Mode: mode}
	ctr := sh.pod.Spec.Containers[0]
	sc := ctr.SecurityContext
	f.Enforced = []string{
		"pod: a container of its own (its own mount, pid, ipc, uts and network namespaces)",
		"capabilities: all dropped",
		"allowPrivilegeEscalation: false (no-new-privileges)",
		"seccomp: the container runtime's default profile (RuntimeDefault)",
		setIDFact,
	}
	if *sc.ReadOnlyRootFilesystem {
		f.Enforced = append(f.Enforced, "read-only root file system")
	} else {
		f.Enforced = append(f.Enforced, "root file system writable (the container's own)")
		f.WritableRoots = append(f.WritableRoots, "/")
	}
	if sh.workspaceDir != "" {
		what := "the emptyDir"
		if s.Workspace.ClaimName != "" {
			what = "the PersistentVolumeClaim " + s.Workspace.ClaimName
		}
		if mode == pluginapi.SandboxReadOnly {
			f.Enforced = append(f.Enforced, "workspace "+sh.workspaceDir+" ("+what+"): mounted read-only")
		} else {
			f.WritableRoots = append(f.WritableRoots, sh.workspaceDir)
			f.Enforced = append(f.Enforced, "workspace "+sh.workspaceDir+" ("+what+"): mounted read-write")
		}
	}
	// Beside the volumes, a command writes what every pod's container
	// gets from its runtime and kubelet: /dev/shm (the pod's), /dev/mqueue
	// (POSIX message queues, bounded per user by the kernel), /dev (the
	// runtime's tmpfs, writable by root), and the kubelet's
	// termination-message file and /etc/hosts (files on the node's disk,
	// which a read-only root does not cover).
	f.WritableRoots = append(f.WritableRoots, "/tmp", agentDir, "/dev/shm", "/dev/mqueue", "/dev", terminationLog, etcHosts)
	if s.ServiceAccountToken {
		f.Enforced = append(f.Enforced, "service-account token: mounted (shell.serviceAccountToken)")
	} else {
		f.Enforced = append(f.Enforced, "service-account token: not mounted")
	}
	switch {
	case uid == nil:
		f.Enforced = append(f.Enforced, "user: the image's")
	case *uid == 0:
		f.Enforced = append(f.Enforced, "user: root (shell.user)")
	default:
		f.Enforced = append(f.Enforced, "user: "+s.User+", runAsNonRoot (shell.user)")
	}
	if sh.denyNetwork {
		f.NotEnforced = append(f.NotEnforced, networkFact)
	} else {
		f.Enforced = append(f.Enforced, "network: the pod's (not denied in this mode)")
	}
	if sh.pod.Spec.RuntimeClassName != nil {
		f.Enforced = append(f.Enforced, "runtimeClassName: "+*sh.pod.Spec.RuntimeClassName)
	}
	if tmpMiB > 0 {
		f.Limits = append(f.Limits, fmt.Sprintf("/tmp %d MiB (an emptyDir's sizeLimit: the kubelet evicts the pod past it)", tmpMiB))
	} else {
		f.Limits = append(f.Limits, "/tmp not bounded (an emptyDir on the node's disk)")
	}
	f.Limits = append(f.Limits, "/dev/shm 64 MiB (the pod's tmpfs, as the container runtime makes it)",
		"/dev/mqueue RLIMIT_MSGQUEUE (POSIX message queues, per user)", "/dev 64 MiB (the container runtime's tmpfs, writable by root)")
	if m, ok := ctr.Resources.Limits[corev1.ResourceMemory]; ok {
		f.Limits = append(f.Limits, "memory "+strconv.FormatInt(m.Value()>>20, 10)+" MiB (the container's memory limit)")
	}
	if c, ok := ctr.Resources.Limits[corev1.ResourceCPU]; ok {
		f.Limits = append(f.Limits, "cpu "+c.String()+" (the container's cpu limit)")
	}
	if p := s.SandboxPolicy.Limits.Processes; p == nil || *p > 0 {
		f.NotEnforced = append(f.NotEnforced, processesFact)
	}
	if mode == pluginapi.SandboxWorkspaceWrite && sh.workspaceDir != "" {
		f.NotEnforced = append(f.NotEnforced, protectedFact)
	}
	return f
}

// uncontained is what a created pod does not close, whatever the policy.
var uncontained = []string{
	"the node's kernel: commands share it (a container, not a virtual machine, unless runtimeClassName names one)",
	"whoever may use the cluster's API on the namespace (pods/exec) can run anything in the pod",
	"the network of a mode without it is denied only where the cluster's CNI enforces NetworkPolicy; the executor does not check that it does",
	"processes are not bounded per pod by the executor (the pids limit is the kubelet's podPidsLimit)",
	"no protected paths: the workspace is writable throughout in workspace-write",
	"CPU time and the workspace's disk space are bounded only by podTemplate.resources and the volume",
}

// uncontainedFor is what a pod under p does not close, for Describe.
func uncontainedFor(p pluginapi.SandboxPolicy) []string {
	u := slices.Clone(uncontained)
	if p.Limits.MemoryMiB == nil || *p.Limits.MemoryMiB == 0 {
		u = append(u, "memory is not bounded by the sandbox policy (sandboxPolicy.limits.memoryMiB 0; podTemplate.resources may bound it)")
	}
	return u
}
