package kubernetes_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// A plugin process SIGKILLed with its pod running leaves the pod and its
// Lease: the next executor's first pod in the namespace sweeps both (the
// dead plugin was of this machine, and its process is gone).
func TestADeadPluginsPodIsSweptAtTheNextStart(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	h, err := host.Launch(ctx, host.Options{
		Executor: host.Executor{Name: "kubernetes", Path: plugin},
		Settings: []byte(c.settings(t, map[string]any{"image": c.image, "kubeconfig": os.Getenv("KUBECONFIG")})),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	if res, err := h.RunRequest(ctx, pluginapi.ExecRequest{Command: "echo up"}, nil); err != nil || res.Stdout.Text != "up\n" {
		t.Fatalf("a command through the plugin: %+v, %v", res, err)
	}
	pid := h.PluginPID()
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: "dsh-host.dev/executor=kubernetes"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Labels["dsh-host.dev/plugin"] == kubernetes.PluginLabel() {
		t.Fatalf("the plugin process's pods: %v, %v; want one, not this process's", pods, err)
	}
	dead := pods.Items[0]
	leases, err := c.cs.CoordinationV1().Leases(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: "dsh-host.dev/plugin=" + dead.Labels["dsh-host.dev/plugin"]})
	if err != nil || len(leases.Items) != 1 {
		t.Fatalf("the plugin process's Lease: %v, %v; want one", leases, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !h.Exited(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the SIGKILLed plugin had not exited after 10s")
		}
	}
	if got, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, dead.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Fatalf("the dead plugin's pod before the next start: %v; want it left running", err)
	}

	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "the dead plugin's pod", func() error {
		_, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, dead.Name, metav1.GetOptions{})
		return err
	})
	c.waitGone(t, "the dead plugin's Lease", func() error {
		_, err := c.cs.CoordinationV1().Leases(c.namespace).Get(ctx, leases.Items[0].Name, metav1.GetOptions{})
		return err
	})
}

// waitGone waits until get says what it reads is not found.
func (c *testCluster) waitGone(t *testing.T, what string, get func() error) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err := get()
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s is still there 30s after the sweep (%v); want it deleted", what, err)
			return
		}
	}
}

// Another machine's plugin is judged by its Lease: its pod and its
// NetworkPolicy are swept once its Lease has expired, with the Lease;
// kept while it is fresh.
func TestASweepJudgesAnotherMachinesPluginByItsLease(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	type left struct {
		pod    string
		lease  string
		policy string
	}
	leave := func(plugin string, renewed time.Time) left {
		labels := map[string]string{"dsh-host.dev/executor": "kubernetes", "dsh-host.dev/machine": "another-machine", "dsh-host.dev/plugin": plugin}
		meta := metav1.ObjectMeta{GenerateName: "dsh-test-other-", Labels: labels}
		p, err := c.cs.CoreV1().Pods(c.namespace).Create(ctx, &corev1.Pod{
			ObjectMeta: meta,
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, TerminationGracePeriodSeconds: new(int64(0)),
				Containers: []corev1.Container{{Name: "main", Image: c.image, Command: []string{"sleep", "3600"}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		at := metav1.NewMicroTime(renewed)
		l, err := c.cs.CoordinationV1().Leases(c.namespace).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: meta,
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: new(plugin + " on another-machine"), LeaseDurationSeconds: new(int32(60)), AcquireTime: &at, RenewTime: &at,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		np, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: meta,
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"dsh-host.dev/plugin": plugin}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return left{p.Name, l.Name, np.Name}
	}
	expired := leave("1-1", time.Now().Add(-time.Hour))
	fresh := leave("2-2", time.Now())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.cs.CoordinationV1().Leases(c.namespace).Delete(ctx, fresh.lease, metav1.DeleteOptions{})
		_ = c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, fresh.policy, metav1.DeleteOptions{})
		_ = c.cs.CoreV1().Pods(c.namespace).Delete(ctx, fresh.pod, metav1.DeleteOptions{})
		c.waitGone(t, "the fresh plugin's pod", func() error {
			_, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, fresh.pod, metav1.GetOptions{})
			return err
		})
	})

	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	c.waitGone(t, "the pod of the plugin whose Lease expired", func() error {
		_, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, expired.pod, metav1.GetOptions{})
		return err
	})
	c.waitGone(t, "the NetworkPolicy of the plugin whose Lease expired", func() error {
		_, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(ctx, expired.policy, metav1.GetOptions{})
		return err
	})
	c.waitGone(t, "the expired Lease", func() error {
		_, err := c.cs.CoordinationV1().Leases(c.namespace).Get(ctx, expired.lease, metav1.GetOptions{})
		return err
	})
	if p, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, fresh.pod, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod of the plugin whose Lease is fresh: %v (deleting: %v); want it kept", err, err == nil && p.DeletionTimestamp != nil)
	}
	if _, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Get(ctx, fresh.policy, metav1.GetOptions{}); err != nil {
		t.Errorf("the NetworkPolicy of the plugin whose Lease is fresh: %v; want it kept", err)
	}
	if _, err := c.cs.CoordinationV1().Leases(c.namespace).Get(ctx, fresh.lease, metav1.GetOptions{}); err != nil {
		t.Errorf("the fresh Lease: %v; want it kept", err)
	}
}
