package kubernetes

import (
	"context"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/internal/hostid"
)

// The sweep, at an executor's first pod in a namespace, deletes what
// dead plugins left there: the pods (and the NetworkPolicies) labelled
// as this executor's whose plugin is gone, then those plugins' Leases.
// A plugin of this machine is judged by its process (hostid.Alive); one
// of another machine by its Lease: dead once the Lease has expired
// (leaseExpiry), or when it has none and its pod is older than
// missingLeaseGrace (a Lease is created before its plugin's first pod,
// and deleted after its last). What cannot be listed is left alone, and
// logged.
const (
	// clockSkew is added to a Lease's expiry: the machines' clocks may
	// differ by that much.
	clockSkew = 30 * time.Second
	// missingLeaseGrace is how old a pod of another machine's plugin
	// without a Lease must be to be swept.
	missingLeaseGrace = 2 * time.Minute
)

// owner is a plugin, as the labels of what it made say.
type owner struct{ machine, plugin string }

func ownerOf(m metav1.ObjectMeta) owner {
	return owner{m.Labels[labelMachine], m.Labels[labelPlugin]}
}

// aliveHere says whether the plugin of this machine that made m runs:
// its annotation has hostid.Self's name; the label has '-' for its '@'.
func aliveHere(m metav1.ObjectMeta) bool {
	name := m.Annotations[annotationPlugin]
	if name == "" {
		name = strings.Replace(m.Labels[labelPlugin], "-", "@", 1)
	}
	return hostid.Alive(name)
}

// leaseExpired says whether l has expired by now, clockSkew allowed.
func leaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	renewed := l.CreationTimestamp.Time
	if l.Spec.AcquireTime != nil {
		renewed = l.Spec.AcquireTime.Time
	}
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	d := leaseDuration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.After(renewed.Add(d + clockSkew))
}

// sweep deletes what dead plugins left in c's namespace.
func (c *cluster) sweep(ctx context.Context) {
	sel := metav1.ListOptions{LabelSelector: labelExecutor + "=" + Name}
	now := time.Now()
	me := owner{labelValue(hostid.MachineID()), PluginLabel()}
	leaseList, err := c.cs.CoordinationV1().Leases(c.namespace).List(ctx, sel)
	byOwner := map[owner]*coordinationv1.Lease{}
	if err != nil {
		// Another machine's plugins cannot be judged: only this one's.
		logf("kubernetes: sweeping %s (%s): listing the Leases: %v\n", c.namespace, c.name, err)
	} else {
		for i := range leaseList.Items {
			byOwner[ownerOf(leaseList.Items[i].ObjectMeta)] = &leaseList.Items[i]
		}
	}
	dead := func(m metav1.ObjectMeta) bool {
		o := ownerOf(m)
		switch {
		case o == me:
			return false
		case o.machine == me.machine:
			return !aliveHere(m)
		case err != nil:
			return false
		}
		if l := byOwner[o]; l != nil {
			return leaseExpired(l, now)
		}
		return now.Sub(m.CreationTimestamp.Time) > missingLeaseGrace
	}
	pods, perr := c.cs.CoreV1().Pods(c.namespace).List(ctx, sel)
	if perr != nil {
		logf("kubernetes: sweeping %s (%s): listing the pods: %v\n", c.namespace, c.name, perr)
	} else {
		for _, p := range pods.Items {
			if !dead(p.ObjectMeta) {
				continue
			}
			err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			c.swept("pod", p.Name, err)
		}
	}
	policies, nerr := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, sel)
	if nerr != nil {
		logf("kubernetes: sweeping %s (%s): listing the NetworkPolicies: %v\n", c.namespace, c.name, nerr)
	} else {
		for _, np := range policies.Items {
			if !dead(np.ObjectMeta) {
				continue
			}
			err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, np.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &np.UID}})
			c.swept("NetworkPolicy", np.Name, err)
		}
	}
	if err != nil {
		return
	}
	for _, l := range leaseList.Items {
		o := ownerOf(l.ObjectMeta)
		gone := o != me && ((o.machine == me.machine && !aliveHere(l.ObjectMeta)) || (o.machine != me.machine && leaseExpired(&l, now)))
		if !gone {
			continue
		}
		err := c.cs.CoordinationV1().Leases(c.namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID}})
		c.swept("Lease", l.Name, err)
	}
}

// swept logs what the sweep deleted, or could not.
func (c *cluster) swept(kind, name string, err error) {
	switch {
	case err == nil:
		logf("kubernetes: swept %s %s/%s of a dead plugin\n", kind, c.namespace, name)
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		logf("kubernetes: sweeping %s %s/%s of a dead plugin: %v\n", kind, c.namespace, name, err)
	}
}
