package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

// A session watches its pod: a pod deleted (from outside, or evicted
// through the Eviction API), or ended (evicted by its node, its container
// exited) cuts the session's stream at once, and the run in flight says
// why, from the pod's status.

// lostReason is why a session was lost, once the pod says.
type lostReason struct {
	mu  sync.Mutex
	why error
}

func (l *lostReason) set(why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.why == nil {
		l.why = why
	}
}

func (l *lostReason) get() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.why
}

// rewatchDelay paces the watch's restarts while the API server is away.
const rewatchDelay = time.Second

// watchWhile watches the pod until ctx ends, and calls lost with why once
// it is deleted, being deleted, or ended; it then returns.
func (p *pod) watchWhile(ctx context.Context, lost func(error)) {
	pods := p.c.cs.CoreV1().Pods(p.c.namespace)
	said := false
	for ctx.Err() == nil {
		// From no version: the first event is the pod as it is now, so a
		// deletion between two watches is seen.
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", p.name).String()})
		if err != nil && !said && ctx.Err() == nil {
			// Said once: it is retried while the session lasts (the API
			// server may be restarting), and a refusal (RBAC without
			// watch) stays.
			said = true
			logf("%s: watching the pod, to see it deleted or evicted under a session: %v\n", p, refusal(err))
		}
		if err == nil {
			why := p.untilGone(ctx, w)
			w.Stop()
			if why != nil {
				lost(why)
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(rewatchDelay):
		}
	}
}

// untilGone returns why the pod is gone once w says so, nil when w ends
// first.
func (p *pod) untilGone(ctx context.Context, w watch.Interface) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			got, isPod := ev.Object.(*corev1.Pod)
			switch {
			case ev.Type == watch.Error:
				return nil
			case !isPod:
			case got.UID != p.uid:
				return fmt.Errorf("%s was deleted (another pod has its name now)", p)
			case ev.Type == watch.Deleted:
				return p.goneWhy(got, true)
			default:
				if why := p.goneWhy(got, false); why != nil {
					return why
				}
			}
		}
	}
}

// goneWhy says why the pod got is gone, or is going: deleted, with its
// disruption's reason if it has one (an eviction's), or ended, with its
// status's reason (Evicted by its node) and its container's end; nil
// while it runs.
func (p *pod) goneWhy(got *corev1.Pod, deleted bool) error {
	var why []string
	if got.Status.Reason != "" || got.Status.Message != "" {
		why = append(why, strings.TrimSpace(got.Status.Reason+": "+got.Status.Message))
	}
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			why = append(why, strings.TrimSpace(c.Reason+": "+c.Message))
		}
	}
	for _, cs := range got.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && cs.Name == p.container {
			why = append(why, fmt.Sprintf("its container %s exited %d: %s %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message)))
		}
	}
	said := ""
	if len(why) > 0 {
		said = " (" + strings.Join(why, "; ") + ")"
	}
	switch {
	case deleted:
		return fmt.Errorf("%s was deleted%s", p, said)
	case got.DeletionTimestamp != nil:
		return fmt.Errorf("%s is being deleted%s", p, said)
	case got.Status.Phase == corev1.PodFailed || got.Status.Phase == corev1.PodSucceeded:
		return fmt.Errorf("%s ended, %s%s", p, got.Status.Phase, said)
	}
	return nil
}

// gone reads the pod and says why it no longer serves (nil while it
// runs); an error is one of reading it.
func (p *pod) gone(ctx context.Context) (error, error) {
	got, err := p.c.cs.CoreV1().Pods(p.c.namespace).Get(ctx, p.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s was deleted", p), nil
	case err != nil:
		return nil, err
	case got.UID != p.uid:
		return fmt.Errorf("%s was deleted (another pod has its name now)", p), nil
	}
	if why := p.goneWhy(got, false); why != nil {
		return why, nil
	}
	if running, err := p.state(got); err != nil || !running {
		return fmt.Errorf("%s does not run (%s)", p, pending(got)), nil
	}
	return nil, nil
}

// goneNowWait bounds goneNow's read.
const goneNowWait = 2 * time.Second

// goneNow is gone, bounded, for a stream that just ended: nil when the
// pod cannot be read (the API server is away).
func (p *pod) goneNow() error {
	ctx, cancel := context.WithTimeout(context.Background(), goneNowWait)
	defer cancel()
	why, err := p.gone(ctx)
	if err != nil {
		return nil
	}
	return why
}
