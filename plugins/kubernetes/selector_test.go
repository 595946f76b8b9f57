package kubernetes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// runLabelled runs a pod of the test image named name, with labels,
// until the test ends, and waits until it runs.
func (c *testCluster) runLabelled(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	c.makeLabelled(t, name, labels, nil)
}

// makeLabelled makes the pod runLabelled runs, with nodeSelector, until
// the test ends; it waits until it runs when it has no nodeSelector.
func (c *testCluster) makeLabelled(t *testing.T, name string, labels, nodeSelector map[string]string) {
	t.Helper()
	ctx := t.Context()
	pods := c.cs.CoreV1().Pods(c.namespace)
	_, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(1)),
			NodeSelector:                  nodeSelector,
			Containers: []corev1.Container{{
				Name: "main", Image: c.image,
				Command: []string{"bash", "-c", `trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{})
		for {
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) || ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if nodeSelector != nil {
		return
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		got, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the test's pod %s did not run: %+v", name, got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A selector attaches to the running pod it matches (not an older one
// that does not run); of several, the oldest (not the first by name). The executor does not sandbox an
// attached pod (it refuses a mode), and never deletes it.
func TestASelectorAttachesToTheOldestPodItMatches(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	sel := map[string]string{"dsh-test/selector": "oldest"}
	c.makeLabelled(t, "dsh-test-sel-0-pending", sel, map[string]string{"dsh-host.dev/no-such-node": "here"})
	time.Sleep(1100 * time.Millisecond)
	c.runLabelled(t, "dsh-test-sel-b", sel)
	// Creation times have seconds: the second pod is a second younger.
	time.Sleep(1100 * time.Millisecond)
	c.runLabelled(t, "dsh-test-sel-a", sel)
	c.runLabelled(t, "dsh-test-sel-other", map[string]string{"dsh-test/selector": "other"})

	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"selector": "dsh-test/selector=oldest"}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "hostname"}, nil)
	if err != nil || res.Stdout.Text != "dsh-test-sel-b\n" {
		t.Fatalf("a command through the selector: %+v, %v; want it in the oldest pod, dsh-test-sel-b", res, err)
	}
	if res.Sandbox != nil {
		t.Errorf("an attached pod's result has sandbox facts %+v; want none: its shape is not the executor's", res.Sandbox)
	}
	if d, _ := x.Describe(ctx); d.SandboxMode != pluginapi.SandboxNone || len(d.Uncontained) != 1 || !strings.Contains(d.Uncontained[0], "does not sandbox") {
		t.Errorf("Describe with a selector: mode %q, uncontained %q; want none, and that nothing is contained", d.SandboxMode, d.Uncontained)
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", SandboxMode: pluginapi.SandboxReadOnly}, nil); !errors.Is(err, pluginapi.ErrInvalidRequest) {
		t.Errorf("a sandbox mode in an attached pod: %v; want it refused", err)
	}
	if err := x.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dsh-test-sel-a", "dsh-test-sel-b"} {
		if p, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Errorf("the pod %s after Close: %v; want it left as it was", name, err)
		}
	}
}

// A selector no running pod matches fails, naming it and the namespace.
func TestASelectorThatMatchesNoRunningPodFails(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"selector": "dsh-test/selector=none"}))); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), `no running pod matches the selector "dsh-test/selector=none" in the namespace `+c.namespace) {
		t.Errorf("a selector nothing matches: %v; want it and the namespace named", err)
	}
}
