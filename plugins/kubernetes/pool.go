package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// maxPool bounds shell.pool: a pool is pods kept running for one plugin
// process, not a cluster's capacity.
const (
	maxPool     = 32
	maxPoolText = "32"
)

// labelPool marks a pool's pod: poolReady once its agent is started,
// poolClaimed once a session took it.
const (
	labelPool   = "dsh-host.dev/pool"
	poolReady   = "ready"
	poolClaimed = "claimed"
)

// pool keeps shell.pool pods of the default mode ready for the settings
// in force, each running with its agent started, so that a session claims
// one at once instead of waiting for a pod to be scheduled, to start and
// to take the agent (seconds). A claim takes the oldest ready pod and
// starts a replacement beside. New settings, or Close, delete the ready
// pods; a claimed pod is its session's target's, and goes as any created
// pod does.
type pool struct {
	mu sync.Mutex
	// want, own and agent are the settings in force: how many pods, the
	// target's part they fit and the agent's part their agents got.
	want       int
	own, agent string
	mode       pluginapi.SandboxMode
	ready      []*warmPod
	filling    int
	// gen changes with the settings and at Close: a fill of another
	// generation deletes what it made.
	gen    int
	closed bool
	// owner sweeps and holds the Lease for the pool's pods; it never has
	// a session.
	owner *target
	fills sync.WaitGroup
}

// warmPod is a ready pod, its agent started.
type warmPod struct {
	pod   *pod
	sess  *remoteexec.Session
	shape shape
}

func newPool(swept *sweptSet) *pool { return &pool{owner: &target{swept: swept}} }

// configure takes the settings' target and agent parts (as split gives
// them): pods that do not fit them go, and the pool fills to their size.
func (pl *pool) configure(own, agent []byte) {
	s := settingsOf(own)
	want := s.Pool
	if s.attaching() || s.Image == "" {
		want = 0
	}
	pl.mu.Lock()
	var stale []*warmPod
	if string(own) != pl.own || string(agent) != pl.agent {
		stale, pl.ready = pl.ready, nil
		pl.gen++
	}
	pl.want, pl.own, pl.agent = want, string(own), string(agent)
	pl.mode = defaultMode(s.SandboxPolicy)
	if len(pl.ready) > want {
		stale = append(stale, pl.ready[want:]...)
		pl.ready = pl.ready[:want]
	}
	pl.fill()
	pl.mu.Unlock()
	for _, w := range stale {
		pl.fills.Add(1)
		go func() {
			defer pl.fills.Done()
			ctx, cancel := context.WithTimeout(context.Background(), closeWait)
			defer cancel()
			w.discard(ctx)
		}()
	}
}

// closeWait bounds the removal of a pool's pod.
const closeWait = 60 * time.Second

// fill starts a pod for each one the pool lacks; pl.mu is held.
func (pl *pool) fill() {
	for !pl.closed && len(pl.ready)+pl.filling < pl.want {
		pl.filling++
		pl.fills.Add(1)
		go pl.fillOne(pl.gen, pl.own, pl.agent, pl.mode)
	}
}

// fillOne creates a pod of mode for the settings own and agent, starts
// its agent, and adds it to the ready ones, unless the settings changed
// meanwhile (then it goes). A failure is logged: the next claim or
// configure tries again.
func (pl *pool) fillOne(gen int, own, agent string, mode pluginapi.SandboxMode) {
	defer pl.fills.Done()
	w, err := pl.start(own, agent, mode)
	pl.mu.Lock()
	pl.filling--
	keep := err == nil && gen == pl.gen && !pl.closed
	if keep {
		pl.ready = append(pl.ready, w)
	}
	pl.mu.Unlock()
	if err != nil {
		logf("kubernetes: a pool's pod: %v\n", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeWait)
	defer cancel()
	if !keep {
		w.discard(ctx)
		return
	}
	w.pod.label(ctx, poolReady, "")
}

// start creates a pod of mode and starts its agent, as a session's target
// would.
func (pl *pool) start(own, agent string, mode pluginapi.SandboxMode) (*warmPod, error) {
	s := settingsOf([]byte(own))
	var scrub localexec.Settings
	if agent != "" {
		_ = json.Unmarshal([]byte(agent), &scrub)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout(s)+commandTimeout)
	defer cancel()
	c, err := connect(s)
	if err != nil {
		return nil, err
	}
	pl.owner.mu.Lock()
	err = pl.owner.prepare(ctx, c)
	pl.owner.mu.Unlock()
	if err != nil {
		return nil, refusal(err)
	}
	sh := podShape(s, mode)
	sh.pod.Labels[labelPool] = poolClaimed // until its agent is started
	p, err := c.create(ctx, s, sh)
	if err != nil {
		return nil, refusal(err)
	}
	sess, err := p.startAgent(ctx, s.Agent, remoteexec.ForwardedEnv(s.ForwardEnv, scrub), false)
	if err != nil {
		_ = p.delete(context.WithoutCancel(ctx))
		return nil, refusal(err)
	}
	return &warmPod{pod: p, sess: sess, shape: sh}, nil
}

// claim takes a ready pod of mode for the settings own and agent, if
// there is one, for partition ("" for every partition), and starts its
// replacement.
func (pl *pool) claim(mode pluginapi.SandboxMode, partition string, own, agent []byte) *warmPod {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed || mode != pl.mode || string(own) != pl.own || string(agent) != pl.agent || len(pl.ready) == 0 {
		return nil
	}
	w := pl.ready[0]
	pl.ready = slices.Delete(pl.ready, 0, 1)
	pl.fill()
	pl.fills.Add(1)
	go func() {
		defer pl.fills.Done()
		ctx, cancel := context.WithTimeout(context.Background(), closeWait)
		defer cancel()
		w.pod.label(ctx, poolClaimed, partition)
	}()
	return w
}

// close deletes the ready pods, waits for the fills under way (whose pods
// go too), and lets the pool's Lease go.
func (pl *pool) close(ctx context.Context) error {
	pl.mu.Lock()
	pl.closed = true
	pl.gen++
	ready := pl.ready
	pl.ready = nil
	pl.mu.Unlock()
	var errs []error
	for _, w := range ready {
		errs = append(errs, w.discard(ctx))
	}
	pl.fills.Wait()
	errs = append(errs, pl.owner.Close(ctx))
	return errors.Join(errs...)
}

// discard ends the pod's agent and deletes the pod.
func (w *warmPod) discard(ctx context.Context) error {
	_ = w.sess.Stream.Close()
	var errs []error
	if w.sess.Cleanup != nil {
		errs = append(errs, w.sess.Cleanup(ctx))
	}
	errs = append(errs, w.pod.delete(ctx))
	return errors.Join(errs...)
}

// label sets the pod's labelPool, and labelPartition to the partition
// that claimed it (when one did), for whoever watches the pool (a bench,
// an operator); a failure is only logged.
func (p *pod) label(ctx context.Context, state, partition string) {
	labels := map[string]string{labelPool: state}
	if partition != "" {
		labels[labelPartition] = labelValue(partition)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	_, err := p.c.cs.CoreV1().Pods(p.c.namespace).Patch(ctx, p.name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		logf("kubernetes: labelling %s %s: %v\n", p, state, err)
	}
}
