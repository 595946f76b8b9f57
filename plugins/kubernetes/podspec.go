package kubernetes

import (
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dsh-host/dsh-host/internal/hostid"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// PodTemplate is the part of a created pod's spec the settings give,
// each field as the Pod API types it; the executor applies it to every
// pod it creates, and sets the rest (the container, its security
// context, the volumes) itself.
type PodTemplate struct {
	// Resources are the shell container's requests and limits; the
	// sandbox policy's limits.memoryMiB, when set, is its memory limit.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector, Tolerations: where the pod may be scheduled.
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
	// ServiceAccountName is the pod's service account; its token is
	// mounted only when serviceAccountToken says so.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// RuntimeClassName is the pod's runtime class (gVisor, Kata).
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
	// ImagePullSecrets are the secrets the kubelet pulls the image with.
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// Workspace is a volume of the created pods the commands start in: a
// PersistentVolumeClaim of the namespace, or an emptyDir of the pod's.
type Workspace struct {
	// MountPath is where it is mounted, and the commands' default
	// workdir (required, absolute).
	MountPath string `json:"mountPath"`
	// ClaimName is the PersistentVolumeClaim; empty: an emptyDir.
	ClaimName string `json:"claimName,omitempty"`
	// SizeLimitMiB bounds an emptyDir (0: no bound); not with ClaimName.
	SizeLimitMiB int64 `json:"sizeLimitMiB,omitempty"`
}

// Volumes of the created pods besides the agent's.
const (
	tmpVolume       = "dsh-tmp"
	workspaceVolume = "dsh-workspace"
)

// defaultTmpMiB is the size limit of /tmp, an emptyDir, by default: the
// container executor's tmpfs size.
const defaultTmpMiB = 1024

// modes are the modes a command may ask for.
var modes = []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess}

// defaultMode is the policy's default mode.
func defaultMode(p pluginapi.SandboxPolicy) pluginapi.SandboxMode {
	if p.DefaultMode == "" {
		return pluginapi.SandboxWorkspaceWrite
	}
	return p.DefaultMode
}

// check refuses settings the executor cannot take, with
// ErrInvalidSettings; Split calls it, so that Configure does.
func (s Settings) check() error {
	p := s.SandboxPolicy
	if p.DefaultMode != "" && !slices.Contains(modes, p.DefaultMode) {
		return fmt.Errorf("%w: sandboxPolicy.defaultMode %q: one of %v", pluginapi.ErrInvalidSettings, p.DefaultMode, modes)
	}
	if len(p.WritableRoots) > 0 {
		return fmt.Errorf("%w: sandboxPolicy.writableRoots %v: these are directories of this machine, which a pod cannot mount; "+
			"the kubernetes executor takes none (give the pod a workspace volume: shell.workspace)", pluginapi.ErrInvalidSettings, p.WritableRoots)
	}
	for name, v := range map[string]*int64{"processes": p.Limits.Processes, "tmpMiB": p.Limits.TmpMiB, "memoryMiB": p.Limits.MemoryMiB} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%w: sandboxPolicy.limits.%s %d is negative", pluginapi.ErrInvalidSettings, name, *v)
		}
	}
	if _, _, err := parseUser(s.User); err != nil {
		return err
	}
	if w := s.Workspace; w != nil {
		switch {
		case !path.IsAbs(w.MountPath):
			return fmt.Errorf("%w: workspace.mountPath %q: an absolute path in the pod is required", pluginapi.ErrInvalidSettings, w.MountPath)
		case path.Clean(w.MountPath) == "/" || path.Clean(w.MountPath) == agentDir || path.Clean(w.MountPath) == "/tmp":
			return fmt.Errorf("%w: workspace.mountPath %q: the executor mounts its own volume there", pluginapi.ErrInvalidSettings, w.MountPath)
		case w.ClaimName != "" && w.SizeLimitMiB != 0:
			return fmt.Errorf("%w: workspace.sizeLimitMiB bounds an emptyDir, not the claim %q", pluginapi.ErrInvalidSettings, w.ClaimName)
		case w.SizeLimitMiB < 0:
			return fmt.Errorf("%w: workspace.sizeLimitMiB %d is negative", pluginapi.ErrInvalidSettings, w.SizeLimitMiB)
		}
	}
	if t := s.PodTemplate; t != nil {
		for _, tol := range t.Tolerations {
			if !slices.Contains([]corev1.TolerationOperator{"", corev1.TolerationOpExists, corev1.TolerationOpEqual}, tol.Operator) {
				return fmt.Errorf("%w: podTemplate.tolerations: operator %q: Exists or Equal", pluginapi.ErrInvalidSettings, tol.Operator)
			}
			if !slices.Contains([]corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}, tol.Effect) {
				return fmt.Errorf("%w: podTemplate.tolerations: effect %q: NoSchedule, PreferNoSchedule or NoExecute", pluginapi.ErrInvalidSettings, tol.Effect)
			}
		}
		for _, ref := range t.ImagePullSecrets {
			if ref.Name == "" {
				return fmt.Errorf("%w: podTemplate.imagePullSecrets: an entry without a name", pluginapi.ErrInvalidSettings)
			}
		}
	}
	if s.Selector != "" {
		if _, err := labels.Parse(s.Selector); err != nil {
			return fmt.Errorf("%w: selector %q: %v", pluginapi.ErrInvalidSettings, s.Selector, err)
		}
	}
	if s.MaxSessions < 0 {
		return fmt.Errorf("%w: maxSessions %d is negative", pluginapi.ErrInvalidSettings, s.MaxSessions)
	}
	if s.Pod != "" && s.Selector != "" {
		return fmt.Errorf("%w: pod and selector: attach to a pod by name or by a label selector, not both", pluginapi.ErrInvalidSettings)
	}
	if s.attaching() {
		for key, set := range map[string]bool{"podTemplate": s.PodTemplate != nil, "workspace": s.Workspace != nil, "user": s.User != "",
			"serviceAccountToken": s.ServiceAccountToken, "imagePullPolicy": s.ImagePullPolicy != "", "pool": s.Pool != 0,
			// Every session shares an attached pod: pods per session
			// would be a promise the executor cannot keep.
			"podPerSession": s.PodPerSession != nil && *s.PodPerSession, "maxSessions": s.MaxSessions != 0,
			// The sandbox section too: accepted, it would say a protection
			// the executor does not give.
			pluginapi.SandboxPolicySetting + " (the settings file's sandbox section)": !reflect.ValueOf(s.SandboxPolicy).IsZero()} {
			if set {
				return fmt.Errorf("%w: %s shapes a pod the executor creates; an attached pod (shell.pod, shell.selector) keeps its own", pluginapi.ErrInvalidSettings, key)
			}
		}
	}
	return nil
}

// attaching says the settings name a pod to attach to, rather than an
// image to create pods of.
func (s Settings) attaching() bool { return s.Pod != "" || s.Selector != "" }

// parseUser reads shell.user, "UID" or "UID:GID" (numbers: the pod's
// securityContext takes no names); empty: the image's user.
func parseUser(u string) (uid, gid *int64, err error) {
	if u == "" {
		return nil, nil, nil
	}
	us, gs, hasGroup := strings.Cut(u, ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil || n < 0 {
		return nil, nil, fmt.Errorf("%w: user %q: UID or UID:GID, numbers (a pod's securityContext takes no user names)", pluginapi.ErrInvalidSettings, u)
	}
	uid = &n
	if hasGroup {
		g, err := strconv.ParseInt(gs, 10, 64)
		if err != nil || g < 0 {
			return nil, nil, fmt.Errorf("%w: user %q: UID or UID:GID, numbers", pluginapi.ErrInvalidSettings, u)
		}
		gid = &g
	}
	return uid, gid, nil
}

// shape is a created pod of one mode, as the settings make it: its spec,
// whether its mode denies the network (a NetworkPolicy selects it), and
// the facts a result reports.
type shape struct {
	pod          *corev1.Pod
	denyNetwork  bool
	facts        pluginapi.SandboxFacts
	workspaceDir string
}

// podShape lays out mode's pod. mode is one of modes.
func podShape(s Settings, mode pluginapi.SandboxMode) shape {
	p := s.SandboxPolicy
	sandboxed := mode != pluginapi.SandboxDangerFullAccess
	sh := shape{denyNetwork: !p.Network && mode != pluginapi.SandboxDangerFullAccess}
	uid, gid, _ := parseUser(s.User) // checked by Settings.check
	tmpMiB := int64(defaultTmpMiB)
	if p.Limits.TmpMiB != nil {
		tmpMiB = *p.Limits.TmpMiB
	}
	tmp := &corev1.EmptyDirVolumeSource{}
	if tmpMiB > 0 {
		tmp.SizeLimit = resource.NewQuantity(tmpMiB<<20, resource.BinarySI)
	}
	ctr := corev1.Container{
		Name: containerName, Image: s.Image, ImagePullPolicy: corev1.PullPolicy(s.ImagePullPolicy),
		Command: []string{"bash", "-c", keepAlive},
		VolumeMounts: []corev1.VolumeMount{
			{Name: agentVolume, MountPath: agentDir},
			{Name: tmpVolume, MountPath: "/tmp"},
		},
		SecurityContext: &corev1.SecurityContext{
			ReadOnlyRootFilesystem:   new(sandboxed),
			AllowPrivilegeEscalation: new(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			RunAsUser:                uid,
			RunAsGroup:               gid,
		},
	}
	if uid != nil {
		ctr.SecurityContext.RunAsNonRoot = new(*uid != 0)
	}
	if sh.denyNetwork {
		// Package managers fail at once instead of retrying for minutes,
		// as in the other sandboxes without network; the agent, exec'd
		// into the container, and its commands inherit the container's
		// variables.
		for _, k := range slices.Sorted(maps.Keys(localexec.OfflineEnv)) {
			ctr.Env = append(ctr.Env, corev1.EnvVar{Name: k, Value: localexec.OfflineEnv[k]})
		}
	}
	volumes := []corev1.Volume{
		{Name: agentVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: tmp}},
	}
	if w := s.Workspace; w != nil {
		src := corev1.VolumeSource{}
		if w.ClaimName != "" {
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: w.ClaimName}
		} else {
			ed := &corev1.EmptyDirVolumeSource{}
			if w.SizeLimitMiB > 0 {
				ed.SizeLimit = resource.NewQuantity(w.SizeLimitMiB<<20, resource.BinarySI)
			}
			src.EmptyDir = ed
		}
		volumes = append(volumes, corev1.Volume{Name: workspaceVolume, VolumeSource: src})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{
			Name: workspaceVolume, MountPath: w.MountPath, ReadOnly: mode == pluginapi.SandboxReadOnly,
		})
		// An exec runs in the container's working directory: the agent,
		// and so each command by default.
		ctr.WorkingDir = w.MountPath
		sh.workspaceDir = path.Clean(w.MountPath)
	}
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: new(int64(gracePeriod)),
		// The commands get no credentials of the cluster's unless the
		// settings ask for them, and no variables of its services.
		AutomountServiceAccountToken: new(s.ServiceAccountToken),
		EnableServiceLinks:           new(false),
		Volumes:                      volumes,
	}
	if t := s.PodTemplate; t != nil {
		if t.Resources != nil {
			ctr.Resources = *t.Resources.DeepCopy()
		}
		spec.NodeSelector = t.NodeSelector
		spec.Tolerations = t.Tolerations
		spec.ServiceAccountName = t.ServiceAccountName
		if t.RuntimeClassName != "" {
			spec.RuntimeClassName = new(t.RuntimeClassName)
		}
		spec.ImagePullSecrets = t.ImagePullSecrets
	}
	if m := p.Limits.MemoryMiB; m != nil && *m > 0 {
		if ctr.Resources.Limits == nil {
			ctr.Resources.Limits = corev1.ResourceList{}
		}
		ctr.Resources.Limits[corev1.ResourceMemory] = *resource.NewQuantity(*m<<20, resource.BinarySI)
	}
	spec.Containers = []corev1.Container{ctr}
	sh.pod = &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "dsh-",
			Labels: map[string]string{
				labelExecutor: Name, labelMachine: labelValue(hostid.MachineID()), labelPlugin: PluginLabel(),
				labelMode: string(mode),
			},
			Annotations: map[string]string{annotationPlugin: hostid.Self()},
		},
		Spec: spec,
	}
	sh.facts = shapeFacts(s, mode, sh, tmpMiB, uid)
	return sh
}
