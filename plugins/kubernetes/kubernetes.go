// Package kubernetes is the Kubernetes executor: commands run in a pod,
// through the cluster's API (k8s.io/client-go), with no kubectl. Open
// creates a pod labelled with this plugin's identity (hostid), or attaches
// to an existing one by name; it brings dsh-agent into the pod over the
// exec stream, for the pod's architecture, checks its SHA-256 there, and
// runs it with its stdio as the executor's stream (remoteexec), over one
// exec: WebSocket first, SPDY as the fallback (remotecommand's
// FallbackExecutor). When that stream closes the agent kills what it
// started; Close also deletes the pod it created, never one it attached
// to.
//
// The pod's own process only keeps it alive, and ends at the first
// SIGTERM: a pod outlives its streams (an API server restart drops them),
// and goes when it is deleted. The executor keeps the pod it created
// across sessions: after a dropped stream the next call starts a new
// agent in the same pod, while it runs (a pod deleted or evicted is
// replaced by a new one). A Lease of this plugin process (lease.go)
// says it is alive to other machines' sweeps (sweep.go).
//
// The sandbox section (sandboxPolicy) maps onto the pods it creates, as
// the container executor's maps onto containers: each mode a command asks
// for is a pod's shape, so each mode gets a pod of its own, created at the
// first command in that mode (modes.go, podspec.go). Every such pod drops
// all capabilities, forbids privilege escalation, runs under the runtime's
// default seccomp profile, mounts no service-account token unless
// serviceAccountToken asks, and runs as shell.user when set (runAsNonRoot
// unless it is root). read-only and workspace-write have a read-only root
// (/tmp is an emptyDir of limits.tmpMiB, the agent's /.dsh another);
// read-only mounts the workspace read-only. A mode without network gets a
// NetworkPolicy denying all ingress and egress, created before its pod,
// selecting that pod alone, owned by it and deleted with it: it is
// enforced only where the cluster's CNI enforces NetworkPolicy, and the
// results' facts say the executor does not enforce it. limits.memoryMiB is
// the container's memory limit; limits.processes cannot be applied (the
// pids limit is the kubelet's), as the facts say; writableRoots (this
// machine's directories) are refused. podTemplate gives the pods'
// resources, nodeSelector, tolerations, serviceAccountName,
// runtimeClassName and imagePullSecrets; workspace a PersistentVolumeClaim
// or an emptyDir the commands start in. A pod attached to, by name (pod)
// or label selector (selector: the oldest running match), keeps its own
// shape: the executor does not sandbox it, and never deletes it.
package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Name is the executor's name.
const Name = "kubernetes"

// Version is the executor's version.
const Version = "0.1.0"

// Settings are the Kubernetes executor's keys of the shell section; the
// other keys (the common ones) go to the agent.
type Settings struct {
	// Kubeconfig is the kubeconfig file; empty: as kubectl finds one
	// (KUBECONFIG, then ~/.kube/config), else the in-cluster config.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Context is the kubeconfig's context to use; empty: its current one.
	Context string `json:"context,omitempty"`
	// Namespace the pod is in; empty: the context's, else the in-cluster
	// one, else "default".
	Namespace string `json:"namespace,omitempty"`
	// Image the pod runs (required unless Pod is set); never pulled by the
	// executor itself: the cluster pulls it as ImagePullPolicy says.
	Image string `json:"image,omitempty"`
	// ImagePullPolicy is the pod's (Always, IfNotPresent, Never); empty:
	// the cluster's default for the image.
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// Pod is an existing pod to attach to, by name, instead of creating
	// one; it is never deleted by the executor.
	Pod string `json:"pod,omitempty"`
	// Container is the container of an attached pod the commands run in;
	// empty: its default container (kubectl's annotation), else its first.
	Container string `json:"container,omitempty"`
	// Agent is the dsh-agent binary to bring into the pod, for its
	// architecture; empty: bin/agent/linux-ARCH/dsh-agent beside this
	// plugin's directory.
	Agent string `json:"agent,omitempty"`
	// StartTimeoutMs bounds the wait for a created pod to run (default
	// 120000: a pull may take that long).
	StartTimeoutMs int64 `json:"startTimeoutMs,omitempty"`
	// ForwardEnv names variables of this plugin's environment the agent
	// gets; credential-like ones are scrubbed here first.
	ForwardEnv []string `json:"forwardEnv,omitempty"`
	// Selector attaches to the running pod this label selector matches
	// (the oldest, then by name, when several do), instead of creating
	// one; it is never deleted by the executor. Not with Pod.
	Selector string `json:"selector,omitempty"`
	// SandboxPolicy is the settings file's sandbox section: each mode a
	// command asks for is the shape of a pod of its own (podspec.go).
	SandboxPolicy pluginapi.SandboxPolicy `json:"sandboxPolicy,omitzero"`
	// User the created pods run as, "UID" or "UID:GID" (runAsUser,
	// runAsGroup, and runAsNonRoot unless UID is 0); empty: the image's.
	User string `json:"user,omitempty"`
	// ServiceAccountToken mounts the pod's service-account token; off,
	// the default, the commands get no credentials of the cluster's.
	ServiceAccountToken bool `json:"serviceAccountToken,omitempty"`
	// PodTemplate is the part of the created pods' spec the settings
	// give: resources, nodeSelector, tolerations, serviceAccountName,
	// runtimeClassName, imagePullSecrets.
	PodTemplate *PodTemplate `json:"podTemplate,omitempty"`
	// Workspace is the created pods' workspace volume, and the commands'
	// default workdir.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Pool keeps this many pods of the default mode ready, each with its
	// agent started, for sessions to claim (pool.go); 0, the default:
	// none. Not for an attached pod.
	Pool int `json:"pool,omitempty"`
	// Partitioning: pods per session (partition.go).
	Partitioning
}

var ownKeys = []string{"kubeconfig", "context", "namespace", "image", "imagePullPolicy", "pod", "container", "agent", "startTimeoutMs", "forwardEnv",
	"selector", pluginapi.SandboxPolicySetting, "user", "serviceAccountToken", "podTemplate", "workspace", "pool",
	"podPerSession", "maxSessions"}

const ownSchema = `"kubeconfig": {"type": "string", "description": "kubeconfig file (default: KUBECONFIG, then ~/.kube/config, else the in-cluster config)"},
    "context": {"type": "string", "description": "the kubeconfig's context (default: its current context)"},
    "namespace": {"type": "string", "description": "namespace of the pod (default: the context's, else default)"},
    "image": {"type": "string", "description": "the image the pod runs (required unless pod is set); it needs bash, coreutils and a sha256 tool"},
    "imagePullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"], "description": "the pod's image pull policy (default: the cluster's for the image)"},
    "pod": {"type": "string", "description": "an existing pod to attach to, by name, instead of creating one (never deleted)"},
    "container": {"type": "string", "description": "the attached pod's container (default: its default container, else its first)"},
    "agent": {"type": "string", "description": "the dsh-agent binary to bring in (default: bin/agent/linux-ARCH/dsh-agent)"},
    "startTimeoutMs": {"type": "integer", "minimum": 1000, "default": 120000, "description": "how long a created pod may take to run"},
    "forwardEnv": {"type": "array", "items": {"type": "string"}, "description": "names of this plugin's variables the agent gets (credentials scrubbed)"},
    "selector": {"type": "string", "minLength": 1, "description": "attach to the running pod this label selector matches (the oldest, then by name, when several do) instead of creating one (never deleted); not with pod"},
    "user": {"type": "string", "pattern": "^[0-9]+(:[0-9]+)?$", "description": "UID or UID:GID the created pods run as (runAsUser, runAsGroup; runAsNonRoot unless UID is 0); default: the image's user"},
    "serviceAccountToken": {"type": "boolean", "default": false, "description": "mount the pod's service-account token (off: the commands get no credentials of the cluster's)"},
    "podTemplate": ` + podTemplateSchema + `,
    "workspace": ` + workspaceSchema + `,
    "pool": {"type": "integer", "minimum": 0, "maximum": ` + maxPoolText + `, "default": 0, "description": "pods of the default mode kept ready, each with its agent started, for a session to claim instead of waiting for a pod to start (0: none); not with pod or selector"},
    "` + pluginapi.SandboxPolicySetting + `": ` + PolicySchema

// SettingsSchema is the JSON Schema of the Kubernetes executor's settings.
var SettingsSchema = remoteexec.SettingsSchema("shell (kubernetes)", ownSchema+partitionSchema)

// New returns the Kubernetes executor.
func New() *Executor {
	swept := &sweptSet{}
	pl := newPool(swept)
	return &Executor{pool: pl, Modes: remoteexec.NewModes(remoteexec.ModesConfig{
		Description: pluginapi.Description{
			Name: Name, Version: Version, Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: SettingsSchema,
			Services: []string{pluginapi.ServiceShell},
			// The commands run in a pod: nothing of this machine's.
			Reach: pluginapi.HostReach{Kind: pluginapi.ReachPaths},
			// The agent in the pod gives them.
			Terminals: true, Input: true,
		},
		Split: split, Modes: sandboxModes, Describe: describe,
		NewTarget: func(mode pluginapi.SandboxMode, partition string) remoteexec.ModeTarget {
			return &target{mode: mode, partition: partition, pool: pl, swept: swept}
		},
		Partitions: func(target []byte) (bool, int, string) {
			per, max := partitions(settingsOf(target))
			return per, max, "shell.maxSessions"
		},
		Executor: "the kubernetes executor", Unit: "pod", IDPrefix: "k",
	})}
}

// target opens the sessions of one sandbox mode (none for an attached
// pod). It keeps the pod it created across them, and deletes it at Close,
// when the settings change, or when it no longer runs (a new one is
// created then). It never deletes a pod it attached to.
type target struct {
	mode pluginapi.SandboxMode
	// partition is the partition the target's pods serve ("" for every
	// partition when pods are not per session).
	partition string
	// pool has pods ready to claim (nil for the pool's own target).
	pool *pool
	mu   sync.Mutex
	// kept is the pod created, nil when there is none; keptFor is the
	// target's part of the settings it was created for.
	kept    *pod
	keptFor string
	// swept are the namespaces (of clusters) a sweep ran in, the
	// executor's; leases release this process's Leases the target holds.
	swept  *sweptSet
	leases map[string]func(context.Context) error
	// facts are what the last pod opened enforces; offline, that its
	// mode denies the network.
	facts   atomic.Pointer[pluginapi.SandboxFacts]
	offline atomic.Bool
}

var _ remoteexec.TargetCloser = (*target)(nil)

func (t *target) Open(ctx context.Context, raw, agentPart []byte) (*remoteexec.Session, error) {
	var s Settings
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
		}
	}
	switch {
	case !s.attaching() && s.Image == "":
		return nil, fmt.Errorf("%w: image: the kubernetes executor needs an image to run a pod of (shell.image), or a pod to attach to (shell.pod, shell.selector)", pluginapi.ErrInvalidSettings)
	case s.attaching() && s.Image != "":
		return nil, fmt.Errorf("%w: image and pod: set one, an image to run a pod of, or a pod to attach to", pluginapi.ErrInvalidSettings)
	}
	var scrub localexec.Settings
	if len(agentPart) > 0 {
		_ = json.Unmarshal(agentPart, &scrub)
	}
	c, err := connect(s)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var p *pod
	fresh := false
	switch {
	case s.Pod != "" || s.Selector != "":
		// The created pod, if any, no longer fits the settings.
		if err := t.dropKept(ctx); err != nil {
			return nil, err
		}
		if s.Pod != "" {
			p, err = c.attach(ctx, s.Pod, s.Container)
		} else {
			p, err = c.attachSelected(ctx, s.Selector, s.Container)
		}
	default:
		if w := t.claim(ctx, c, raw, agentPart); w != nil {
			return w, nil
		}
		p, fresh, err = t.podFor(ctx, c, s, string(raw))
	}
	if err != nil {
		return nil, refusal(err)
	}
	sess, err := p.startAgent(ctx, s.Agent, remoteexec.ForwardedEnv(s.ForwardEnv, scrub), !fresh)
	if err != nil {
		if fresh {
			_ = t.dropKept(context.WithoutCancel(ctx))
		}
		return nil, refusal(err)
	}
	return sess, nil
}

// podFor is the pod the next session of settings s (raw) runs in: the
// kept one while it was created for them and still runs, else a new one
// (fresh). An error reading the kept pod (the API server is away) fails
// the call, and keeps the pod for the next.
func (t *target) podFor(ctx context.Context, c *cluster, s Settings, raw string) (p *pod, fresh bool, err error) {
	if t.kept != nil && t.keptFor == raw {
		why, err := t.kept.gone(ctx)
		if err != nil {
			return nil, false, fmt.Errorf("kubernetes: reading %s, to reconnect to it: %w", t.kept, err)
		}
		if why == nil {
			return t.kept, false, nil
		}
		logf("%v: a new pod is created\n", why)
	}
	if err := t.dropKept(ctx); err != nil {
		return nil, false, err
	}
	if err := t.prepare(ctx, c); err != nil {
		return nil, false, err
	}
	sh := podShape(s, t.mode)
	if t.partition != "" {
		sh.pod.Labels[labelPartition] = labelValue(t.partition)
	}
	if p, err = c.create(ctx, s, sh); err != nil {
		return nil, false, err
	}
	t.facts.Store(&sh.facts)
	t.offline.Store(sh.denyNetwork)
	t.kept, t.keptFor = p, raw
	return p, true, nil
}

// prepare readies c's namespace for this target's first pod there: the
// sweep of dead plugins' pods (once per namespace), and this process's
// Lease, which must be there before its pods are.
// claim takes a pod of the pool, ready with its agent started, as the
// pod this target created, when the target has none for these settings
// (it reconnects to one it has); t.mu is held. Nil: the pool has none.
func (t *target) claim(ctx context.Context, c *cluster, own, agent []byte) *remoteexec.Session {
	if t.pool == nil || t.kept != nil && t.keptFor == string(own) {
		return nil
	}
	w := t.pool.claim(t.mode, t.partition, own, agent)
	if w == nil {
		return nil
	}
	// The target holds the Lease its pods need from now on, as for a pod
	// of its own (the pool holds it too: no call to the API), and the
	// pool swept the namespace; the pool's pod takes the place of one
	// that no longer fits the settings.
	t.swept.first(c.key())
	err := t.prepare(ctx, c)
	if err == nil {
		err = t.dropKept(ctx)
	}
	if err != nil {
		_ = w.discard(context.WithoutCancel(ctx))
		return nil
	}
	t.kept, t.keptFor = w.pod, string(own)
	t.facts.Store(&w.shape.facts)
	t.offline.Store(w.shape.denyNetwork)
	return w.sess
}

func (t *target) prepare(ctx context.Context, c *cluster) error {
	key := c.key()
	if t.swept.first(key) {
		c.sweep(ctx)
	}
	if _, ok := t.leases[key]; ok {
		return nil
	}
	release, err := c.holdLease(ctx)
	if err != nil {
		return err
	}
	if t.leases == nil {
		t.leases = map[string]func(context.Context) error{}
	}
	t.leases[key] = release
	return nil
}

// dropKept deletes the kept pod, if any, and waits until it is gone.
func (t *target) dropKept(ctx context.Context) error {
	if t.kept == nil {
		return nil
	}
	if err := t.kept.delete(ctx); err != nil {
		return err
	}
	t.kept, t.keptFor = nil, ""
	return nil
}

// Close deletes the pod created, then releases this process's Leases
// (the last release deletes one).
func (t *target) Close(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	errs := []error{t.dropKept(ctx)}
	for _, release := range t.leases {
		errs = append(errs, release(ctx))
	}
	t.leases = nil
	return errors.Join(errs...)
}
