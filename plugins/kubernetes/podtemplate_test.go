package kubernetes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// runtimeClass makes a RuntimeClass of containerd's default handler
// (runc) for the test, and deletes it at its end.
func (c *testCluster) runtimeClass(t *testing.T) string {
	t.Helper()
	rcs := c.cs.NodeV1().RuntimeClasses()
	rc, err := rcs.Create(t.Context(), &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-test-runc-"}, Handler: "runc",
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rcs.Delete(ctx, rc.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the RuntimeClass %s: %v", rc.Name, err)
		}
	})
	return rc.Name
}

// serviceAccount makes a ServiceAccount in the test's namespace, and
// deletes it at the test's end.
func (c *testCluster) serviceAccount(t *testing.T) string {
	t.Helper()
	sas := c.cs.CoreV1().ServiceAccounts(c.namespace)
	sa, err := sas.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-test-sa-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := sas.Delete(ctx, sa.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting the ServiceAccount %s: %v", sa.Name, err)
		}
	})
	return sa.Name
}

// Each field of podTemplate is in the created pod's spec, and the pod
// runs the commands.
func TestThePodTemplateIsApplied(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	rc := c.runtimeClass(t)
	sa := c.serviceAccount(t)
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{
		"image": c.image,
		"podTemplate": map[string]any{
			"resources":          map[string]any{"requests": map[string]any{"cpu": "10m", "memory": "16Mi"}, "limits": map[string]any{"cpu": "500m"}},
			"nodeSelector":       map[string]any{"kubernetes.io/os": "linux"},
			"tolerations":        []any{map[string]any{"key": "dsh-host.dev/test", "operator": "Exists", "effect": "NoSchedule"}},
			"serviceAccountName": sa,
			"runtimeClassName":   rc,
			"imagePullSecrets":   []any{map[string]any{"name": "dsh-test-pull"}},
		},
	}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo templated"}, nil)
	if err != nil || res.Stdout.Text != "templated\n" {
		t.Fatalf("a command in the templated pod: %+v, %v", res, err)
	}
	pods := c.podsOf(t)
	if len(pods) != 1 {
		t.Fatalf("the executor's pods: %v; want one", pods)
	}
	for _, p := range pods {
		s := p.Spec
		r := s.Containers[0].Resources
		if q := r.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("10m")) != 0 {
			t.Errorf("cpu request: %s; want 10m", q.String())
		}
		if q := r.Requests[corev1.ResourceMemory]; q.Cmp(resource.MustParse("16Mi")) != 0 {
			t.Errorf("memory request: %s; want 16Mi", q.String())
		}
		if q := r.Limits[corev1.ResourceCPU]; q.Cmp(resource.MustParse("500m")) != 0 {
			t.Errorf("cpu limit: %s; want 500m", q.String())
		}
		if s.NodeSelector["kubernetes.io/os"] != "linux" {
			t.Errorf("nodeSelector: %v", s.NodeSelector)
		}
		found := false
		for _, tol := range s.Tolerations {
			found = found || (tol.Key == "dsh-host.dev/test" && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule)
		}
		if !found {
			t.Errorf("tolerations: %+v; want the template's", s.Tolerations)
		}
		if s.ServiceAccountName != sa {
			t.Errorf("serviceAccountName: %q; want %s", s.ServiceAccountName, sa)
		}
		if s.RuntimeClassName == nil || *s.RuntimeClassName != rc {
			t.Errorf("runtimeClassName: %v; want %s", s.RuntimeClassName, rc)
		}
		if len(s.ImagePullSecrets) != 1 || s.ImagePullSecrets[0].Name != "dsh-test-pull" {
			t.Errorf("imagePullSecrets: %+v", s.ImagePullSecrets)
		}
	}
}

// A runtimeClassName the cluster does not have fails the first call with
// the API's reason; the NetworkPolicy made before the pod is gone (no pod
// owned it, so only the executor could delete it).
func TestARuntimeClassThatDoesNotExistFails(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{
		"image": c.image, "podTemplate": map[string]any{"runtimeClassName": "dsh-no-such-class"},
	}))); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), `RuntimeClass "dsh-no-such-class" not found`) {
		t.Errorf("a runtime class the cluster lacks: %v; want the API's reason", err)
	}
	// The policy goes before the call returns.
	if left, lerr := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, metav1.ListOptions{}); lerr != nil || len(left.Items) != 0 {
		t.Errorf("NetworkPolicies after the failed start: %v, %v; want none", left, lerr)
	}
}

// A nodeSelector no node matches fails at the start timeout, with the
// scheduler's event; the pod is deleted.
func TestANodeSelectorNoNodeMatchesFailsAtTheStartTimeout(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{
		"image": c.image, "startTimeoutMs": 3000,
		"podTemplate": map[string]any{"nodeSelector": map[string]any{"dsh-host.dev/no-such-node": "here"}},
	}))); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "not running after 3s") || !strings.Contains(err.Error(), "FailedScheduling") ||
		!strings.Contains(err.Error(), "node(s) didn't match Pod's node affinity/selector") {
		t.Errorf("a pod no node may run: %v; want the start timeout, with the scheduler's event", err)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("it failed after %s; want it at the start timeout", d)
	}
}

// A podTemplate the schema does not have is refused at Configure.
func TestAPodTemplateOfUnknownKeysIsRefused(t *testing.T) {
	x := kubernetes.New()
	defer x.Close(t.Context())
	err := x.Configure(t.Context(), []byte(`{"image": "i", "podTemplate": {"hostNetwork": true}}`))
	if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), "hostNetwork") {
		t.Errorf("podTemplate.hostNetwork: %v; want it refused", err)
	}
}
