package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/dsh-host/dsh-host/internal/hostid"
)

// Labels on every pod the executor creates: that it is one, and the
// plugin that made it (its machine, and its pid and start time), so that
// a sweep can find those whose plugin is dead. A label value cannot hold
// hostid.Self's '@': the label has '-' there, and the annotation
// annotationPlugin has the name as Self gives it, for hostid.Alive.
const (
	labelExecutor    = "dsh-host.dev/executor"
	labelMachine     = "dsh-host.dev/machine"
	labelPlugin      = "dsh-host.dev/plugin"
	annotationPlugin = "dsh-host.dev/plugin"
)

// PluginLabel is this process's value of labelPlugin on the pods it
// creates.
func PluginLabel() string { return labelValue(strings.ReplaceAll(hostid.Self(), "@", "-")) }

// labelValue is v as a label's value: itself when it is one, else a
// shortened form that is (a host name of over 63 characters).
func labelValue(v string) string {
	v = badLabelChars.ReplaceAllString(v, "_")
	if len(v) > 63 {
		v = v[:63]
	}
	return strings.Trim(v, "_.-")
}

var badLabelChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// containerName is the container of the pods the executor creates.
const containerName = "shell"

// agentVolume is an emptyDir of the created pods, mounted at agentDir:
// the agent is written there, so that it runs also when the image's root
// file system is read-only.
const (
	agentVolume = "dsh-agent"
	agentDir    = "/.dsh"
)

// keepAlive is the created pod's process: it keeps the pod running,
// whatever its streams do, and ends at the first SIGTERM (as PID 1 it
// would otherwise ignore it, and a deletion wait out the grace period).
const keepAlive = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

// gracePeriod is the created pod's termination grace period: its process
// ends at SIGTERM, and the agent's commands die with their stream.
const gracePeriod = 2

// defaultStartTimeout bounds the wait for a created pod to run.
const defaultStartTimeout = 120 * time.Second

// startTimeout bounds the wait for a pod of s to run.
func startTimeout(s Settings) time.Duration {
	if s.StartTimeoutMs > 0 {
		return time.Duration(s.StartTimeoutMs) * time.Millisecond
	}
	return defaultStartTimeout
}

// pod is the pod the commands run in.
type pod struct {
	c         *cluster
	name      string
	uid       types.UID
	container string
	// created says the executor created it: Close deletes it.
	created bool
	// policy is the NetworkPolicy that denies its network ("" for none),
	// deleted with it.
	policy string
}

func (p *pod) String() string { return "pod " + p.c.namespace + "/" + p.name + " (" + p.c.name + ")" }

// attach finds the pod name, running, and the container of it the
// commands run in.
func (c *cluster) attach(ctx context.Context, name, container string) (*pod, error) {
	got, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the pod %s/%s to attach to (%s): %w", c.namespace, name, c.name, err)
	}
	p := &pod{c: c, name: name, uid: got.UID, container: container}
	if p.container == "" {
		p.container = got.Annotations["kubectl.kubernetes.io/default-container"]
	}
	if p.container == "" && len(got.Spec.Containers) > 0 {
		p.container = got.Spec.Containers[0].Name
	}
	if !slices.ContainsFunc(got.Spec.Containers, func(c corev1.Container) bool { return c.Name == p.container }) {
		return nil, fmt.Errorf("kubernetes: %s has no container %q", p, p.container)
	}
	if running, err := p.state(got); err != nil {
		return nil, err
	} else if !running {
		return nil, fmt.Errorf("kubernetes: %s is %s, not running: the executor attaches only to a running pod", p, got.Status.Phase)
	}
	return p, nil
}

// create creates a pod of the image in mode's shape (podspec.go),
// labelled with this plugin's identity, and waits until it runs; a mode
// without network gets its NetworkPolicy first. A pod that cannot start is
// deleted, with its policy, and the error says why, with its events.
func (c *cluster) create(ctx context.Context, s Settings, sh shape) (*pod, error) {
	spec := sh.pod.DeepCopy()
	var policy string
	if sh.denyNetwork {
		id := shapeID()
		spec.Labels[labelShape] = id
		var err error
		if policy, err = c.denyAll(ctx, id); err != nil {
			return nil, err
		}
	}
	made, err := c.cs.CoreV1().Pods(c.namespace).Create(ctx, spec, metav1.CreateOptions{})
	if err != nil {
		_ = c.deletePolicy(context.WithoutCancel(ctx), policy)
		return nil, fmt.Errorf("kubernetes: creating a pod of %s in %s (%s): %w", s.Image, c.namespace, c.name, err)
	}
	p := &pod{c: c, name: made.Name, uid: made.UID, container: containerName, created: true, policy: policy}
	if policy != "" {
		if err := p.ownPolicy(ctx); err != nil {
			_ = p.delete(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	timeout := startTimeout(s)
	if err := p.waitRunning(ctx, made, timeout); err != nil {
		_ = p.delete(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("kubernetes: %s of %s: %w", p, s.Image, err)
	}
	return p, nil
}

// waitRunning waits until the pod's container runs, watching it from
// got's version on. A pod that cannot start (its image is not there, it
// ended) fails at once; one still pending after timeout fails then. Either
// error carries the pod's events.
func (p *pod) waitRunning(parent context.Context, got *corev1.Pod, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	pods := p.c.cs.CoreV1().Pods(p.c.namespace)
	for {
		running, err := p.state(got)
		if err != nil {
			return p.withEvents(err)
		}
		if running {
			return nil
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", p.name).String(),
			ResourceVersion: got.ResourceVersion,
		})
		if err == nil {
			got, err = p.watchUntilChange(ctx, w, got)
			w.Stop()
		}
		if ctx.Err() != nil {
			if parent.Err() != nil {
				return parent.Err()
			}
			return p.withEvents(fmt.Errorf("not running after %s (%s)", timeout, pending(got)))
		}
		if err != nil {
			// The watch failed (its version too old, the connection
			// dropped): read the pod again, and watch from there.
			if got, err = pods.Get(ctx, p.name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("reading the pod: %w", err)
			}
		}
	}
}

// watchUntilChange returns the pod as the next event of w says it is now,
// got when w ends without one.
func (p *pod) watchUntilChange(ctx context.Context, w watch.Interface, got *corev1.Pod) (*corev1.Pod, error) {
	for {
		select {
		case <-ctx.Done():
			return got, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return got, errors.New("the watch ended")
			}
			switch ev.Type {
			case watch.Deleted:
				return got, errors.New("deleted while it started")
			case watch.Error:
				return got, apierrors.FromObject(ev.Object)
			}
			if now, ok := ev.Object.(*corev1.Pod); ok && now.UID == p.uid {
				return now, nil
			}
		}
	}
}

// cannotStart are the reasons of a waiting container that does not start
// by waiting longer.
var cannotStart = []string{"ErrImageNeverPull", "InvalidImageName", "ErrImagePull", "ImagePullBackOff",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff"}

// state says whether the pod's container runs, and fails for a pod that
// will not: it ended, or its container cannot start.
func (p *pod) state(got *corev1.Pod) (bool, error) {
	if got.DeletionTimestamp != nil {
		return false, fmt.Errorf("%s is being deleted", p)
	}
	switch got.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		why := string(got.Status.Phase)
		if got.Status.Reason != "" {
			why += ": " + got.Status.Reason + ": " + got.Status.Message
		}
		for _, cs := range got.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				why += fmt.Sprintf("; container %s exited %d: %s %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
			}
		}
		return false, fmt.Errorf("it ended (%s)", why)
	}
	for _, cs := range got.Status.ContainerStatuses {
		if cs.Name != p.container {
			continue
		}
		if cs.State.Running != nil {
			return got.Status.Phase == corev1.PodRunning, nil
		}
		if w := cs.State.Waiting; w != nil && slices.Contains(cannotStart, w.Reason) {
			return false, fmt.Errorf("its container cannot start: %s: %s", w.Reason, w.Message)
		}
	}
	return false, nil
}

// pending says what a pod not yet running waits for.
func pending(got *corev1.Pod) string {
	why := []string{"phase " + string(got.Status.Phase)}
	for _, c := range got.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Reason != "" {
			why = append(why, string(c.Type)+": "+c.Reason+": "+c.Message)
		}
	}
	for _, cs := range got.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			why = append(why, "container "+cs.Name+" waiting: "+w.Reason+" "+w.Message)
		}
	}
	return strings.Join(why, "; ")
}

// eventsWait bounds the wait for a pod's first warning event, which the
// kubelet records a moment after the status it explains.
const eventsWait = 3 * time.Second

// withEvents is err followed by the pod's events (its warnings, or all
// of them when it has none).
func (p *pod) withEvents(err error) error {
	ctx, cancel := context.WithTimeout(context.Background(), eventsWait)
	defer cancel()
	var list []corev1.Event
	for {
		got, lerr := p.c.cs.CoreV1().Events(p.c.namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": p.name, "involvedObject.uid": string(p.uid)}.String(),
		})
		if lerr == nil {
			list = got.Items
		}
		if slices.ContainsFunc(list, func(e corev1.Event) bool { return e.Type == corev1.EventTypeWarning }) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(list) == 0 {
		return fmt.Errorf("%w; it has no events", err)
	}
	warnings := slices.DeleteFunc(slices.Clone(list), func(e corev1.Event) bool { return e.Type != corev1.EventTypeWarning })
	if len(warnings) > 0 {
		list = warnings
	}
	var b strings.Builder
	for i, e := range list {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
		if e.Count > 1 {
			fmt.Fprintf(&b, " (%d times)", e.Count)
		}
	}
	return fmt.Errorf("%w; its events: %s", err, b.String())
}

// deleteWait bounds the deletion of a pod, and the wait until it is gone.
const deleteWait = 30 * time.Second

// delete deletes the pod and waits until it is gone (its UID no longer
// found), so that Close leaves nothing of its session on the cluster.
func (p *pod) delete(ctx context.Context) (rerr error) {
	if !p.created {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, deleteWait)
	defer cancel()
	pods := p.c.cs.CoreV1().Pods(p.c.namespace)
	err := pods.Delete(ctx, p.name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.uid}})
	defer func() {
		// The pod's deletion may have used up ctx.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteWait)
		defer cancel()
		if perr := p.c.deletePolicy(pctx, p.policy); perr != nil && rerr == nil {
			rerr = perr
		}
	}()
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another pod of its name (the precondition)
	}
	if err != nil {
		return fmt.Errorf("kubernetes: deleting %s: %w", p, err)
	}
	for {
		got, err := pods.Get(ctx, p.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && got.UID != p.uid) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes: %s was deleted but is still there after %s (%v)", p, deleteWait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
