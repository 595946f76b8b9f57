package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsh-host/dsh-host/internal/hostid"
)

// The plugin process's heartbeat: a coordination.k8s.io/v1 Lease in each
// namespace it creates pods in, named for the process (LeaseName) and
// labelled as its pods are, created before its first pod there, renewed
// every leaseRenew, and deleted when its last executor there closes. A
// sweep on another machine, which cannot ask this one's /proc, judges the
// plugin of a pod dead when its Lease has expired (sweep.go).
const (
	// leaseDuration is the Lease's spec.leaseDurationSeconds: renewals may
	// fail for that long (the API server restarting) before the Lease
	// expires.
	leaseDuration = 60 * time.Second
	// leaseRenew is how often the Lease is renewed: several renewals
	// fit in leaseDuration.
	leaseRenew = 15 * time.Second
)

// LeaseName is the name of this process's Lease: "dsh-", its machine and
// its plugin label (pid and start time), as a DNS subdomain.
func LeaseName() string {
	return leaseName(labelValue(hostid.MachineID()), PluginLabel())
}

func leaseName(machine, plugin string) string {
	n := strings.ToLower("dsh-" + machine + "-" + plugin)
	n = badNameChars.ReplaceAllString(n, "-")
	return strings.TrimRight(n, "-.")
}

var badNameChars = regexp.MustCompile(`[^a-z0-9.-]`)

// key names c's API server and namespace: a Lease and a sweep are per
// namespace.
func (c *cluster) key() string { return c.rest.Host + "|" + c.namespace }

// leases are this process's Leases, by cluster key, each held by the
// executors that created a pod there.
var leases = struct {
	sync.Mutex
	held map[string]*heldLease
}{held: map[string]*heldLease{}}

type heldLease struct {
	refs int
	stop context.CancelFunc
	done chan struct{}
}

// holdLease makes sure this process's Lease is in c's namespace and
// renewed, and returns what releases the hold: the last release stops the
// renewals and deletes the Lease. A Lease that cannot be created fails
// the call: without it, another machine's sweep would take this plugin's
// pods for a dead plugin's.
func (c *cluster) holdLease(ctx context.Context) (func(context.Context) error, error) {
	key := c.key()
	leases.Lock()
	defer leases.Unlock()
	h := leases.held[key]
	if h == nil {
		if err := c.putLease(ctx); err != nil {
			return nil, err
		}
		renewCtx, stop := context.WithCancel(context.Background())
		h = &heldLease{stop: stop, done: make(chan struct{})}
		go func() {
			defer close(h.done)
			c.renewLease(renewCtx)
		}()
		leases.held[key] = h
	}
	h.refs++
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			leases.Lock()
			defer leases.Unlock()
			if h.refs--; h.refs > 0 {
				return
			}
			delete(leases.held, key)
			h.stop()
			<-h.done
			err = c.deleteLease(ctx)
		})
		return err
	}, nil
}

// putLease creates this process's Lease, or renews it when it is there.
func (c *cluster) putLease(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:        LeaseName(),
			Labels:      map[string]string{labelExecutor: Name, labelMachine: labelValue(hostid.MachineID()), labelPlugin: PluginLabel()},
			Annotations: map[string]string{annotationPlugin: hostid.Self()},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       new(hostid.Self() + " on " + hostid.MachineID()),
			LeaseDurationSeconds: new(int32(leaseDuration / time.Second)),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}
	_, err := c.cs.CoordinationV1().Leases(c.namespace).Create(ctx, l, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		err = c.renewOnce(ctx)
	}
	if err != nil {
		return fmt.Errorf("kubernetes: creating this plugin's Lease %s/%s (%s), its heartbeat, before its first pod: %w", c.namespace, LeaseName(), c.name, err)
	}
	return nil
}

// renewOnce sets the Lease's renewTime to now.
func (c *cluster) renewOnce(ctx context.Context) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": metav1.NewMicroTime(time.Now())}})
	if err != nil {
		return err
	}
	_, err = c.cs.CoordinationV1().Leases(c.namespace).Patch(ctx, LeaseName(), types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// renewLease renews the Lease every leaseRenew until ctx ends; one that
// is gone (a sweep took this plugin for dead) is created again.
func (c *cluster) renewLease(ctx context.Context) {
	t := time.NewTicker(leaseRenew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := c.renewOnce(ctx)
		if apierrors.IsNotFound(err) {
			logf("kubernetes: this plugin's Lease %s/%s was gone: created again\n", c.namespace, LeaseName())
			err = c.putLease(ctx)
		}
		if err != nil && ctx.Err() == nil {
			logf("kubernetes: renewing this plugin's Lease %s/%s: %v\n", c.namespace, LeaseName(), err)
		}
	}
}

// deleteLease deletes this process's Lease.
func (c *cluster) deleteLease(ctx context.Context) error {
	err := c.cs.CoordinationV1().Leases(c.namespace).Delete(ctx, LeaseName(), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: deleting this plugin's Lease %s/%s: %w", c.namespace, LeaseName(), err)
	}
	return nil
}
