package kubernetes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// agent is dsh-agent, built static by TestMain; plugin is
// dsh-executor-kubernetes, built by TestMain too.
var agent, plugin string

func TestMain(m *testing.M) {
	dir, err := pluginapitest.BuildDir("dsh-kubernetes-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agent = filepath.Join(dir, "dsh-agent")
	cmd := exec.Command("go", "build", "-o", agent, "github.com/dsh-host/dsh-host/cmd/dsh-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dsh-agent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	plugin = filepath.Join(dir, "dsh-executor-kubernetes")
	cmd = exec.Command("go", "build", "-o", plugin, "github.com/dsh-host/dsh-host/plugins/kubernetes/cmd/dsh-executor-kubernetes")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dsh-executor-kubernetes:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testCluster is the cluster under test (.ci/k8s starts one and sets
// KUBECONFIG, DSH_TEST_K8S_IMAGE and DSH_TEST_K8S_NAMESPACE): a client of
// it, and the executor's settings for it. The test is skipped without
// one, and fails under CI=true.
type testCluster struct {
	cs        k8s.Interface
	image     string
	namespace string
}

func cluster(t *testing.T) *testCluster {
	t.Helper()
	for _, k := range []string{"KUBECONFIG", "DSH_TEST_K8S_IMAGE", "DSH_TEST_K8S_NAMESPACE"} {
		if os.Getenv(k) == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no cluster: %s is not set (under CI=true the cluster must run: .ci/k8s starts one and sets it)", k)
			}
			t.Skip("no cluster: set KUBECONFIG, DSH_TEST_K8S_IMAGE and DSH_TEST_K8S_NAMESPACE (.ci/k8s up starts one)")
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &testCluster{cs: cs, image: os.Getenv("DSH_TEST_K8S_IMAGE"), namespace: os.Getenv("DSH_TEST_K8S_NAMESPACE")}
	t.Cleanup(func() { c.requireNoPods(t) })
	return c
}

// settings are the executor's settings for the cluster, with extra.
func (c *testCluster) settings(t *testing.T, extra map[string]any) string {
	t.Helper()
	m := map[string]any{"namespace": c.namespace, "agent": agent}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// requireNoPods fails when a pod, a Lease or a NetworkPolicy is still in
// the test's namespace once the test's executors are closed (Close waits
// until the pod it created is gone, and deletes its Lease when it is the
// process's last executor there) and what the test made itself is
// deleted. What it finds is deleted, so that the next test starts clean.
func (c *testCluster) requireNoPods(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing the pods left: %v", err)
		return
	}
	for _, p := range list.Items {
		t.Errorf("pod %s (%s) is still on the cluster after its executor closed", p.Name, p.Status.Phase)
		_ = c.cs.CoreV1().Pods(c.namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
	}
	leases, err := c.cs.CoordinationV1().Leases(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing the Leases left: %v", err)
		return
	}
	for _, l := range leases.Items {
		t.Errorf("Lease %s is still on the cluster after its executor closed", l.Name)
		_ = c.cs.CoordinationV1().Leases(c.namespace).Delete(ctx, l.Name, metav1.DeleteOptions{})
	}
	policies, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("listing the NetworkPolicies left: %v", err)
		return
	}
	for _, np := range policies.Items {
		t.Errorf("NetworkPolicy %s is still on the cluster after its executor closed", np.Name)
		_ = c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, np.Name, metav1.DeleteOptions{})
	}
}

// The suite passes with the commands in a pod. Its witness must see the
// processes of every case's executor, also once that executor is closed,
// so every executor attaches to one pod the test made (a created pod goes
// with its executor, and another pod is another PID namespace). A
// directory of this machine (the cluster's only node) is mounted at the
// same path in that pod, and is the test's TMPDIR, so that the cases'
// workdirs are there too; the variables the suite sets are forwarded. No
// executor deletes the pod it attached to.
func TestConformanceInAPod(t *testing.T) {
	c := cluster(t)
	workspace, err := os.MkdirTemp("", "dsh-kubernetes-workspace-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(workspace)
	if err := os.Chmod(workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", workspace)
	name := c.runPod(t, workspace)
	base := c.settings(t, map[string]any{"pod": name, "forwardEnv": pluginapitest.InheritedNames()})
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor { return kubernetes.New() },
		pluginapitest.Options{Settings: base, Elsewhere: true})
	// Every case closed its executors: none deleted the pod it attached to.
	if p, err := c.cs.CoreV1().Pods(c.namespace).Get(t.Context(), name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the pod the executors attached to, after the suite: %v (deleting: %v); want it left as it was", err, err == nil && p.DeletionTimestamp != nil)
	}
}

// runPod runs a pod of the test image with workspace mounted at its own
// path, until the test ends, and returns its name.
func (c *testCluster) runPod(t *testing.T, workspace string) string {
	t.Helper()
	ctx := t.Context()
	pods := c.cs.CoreV1().Pods(c.namespace)
	hostPath := corev1.HostPathDirectory
	p, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-test-attach-"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(1)),
			Containers: []corev1.Container{{
				Name: "main", Image: c.image,
				Command:      []string{"bash", "-c", `trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`},
				VolumeMounts: []corev1.VolumeMount{{Name: "workspace", MountPath: workspace}},
			}},
			Volumes: []corev1.Volume{{Name: "workspace", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: workspace, Type: &hostPath},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{})
		for {
			if _, err := pods.Get(ctx, p.Name, metav1.GetOptions{}); apierrors.IsNotFound(err) || ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.PodRunning {
			return p.Name
		}
		if time.Now().After(deadline) || got.Status.Phase == corev1.PodFailed {
			t.Fatalf("the test's pod %s did not run: %+v", p.Name, got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A pod the executor creates runs the commands, carries this plugin's
// labels, and is gone once the executor is closed; this plugin's Lease is
// there while it runs, and goes at Close too.
func TestACreatedPodRunsTheCommandsAndGoesAtClose(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo in a pod; echo oops >&2; exit 3"}, nil)
	if err != nil || res.Stdout.Text != "in a pod\n" || res.Stderr.Text != "oops\n" || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Fatalf("a command in the pod: %+v, %v; want its output and exit code 3", res, err)
	}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "dsh-host.dev/executor=kubernetes,dsh-host.dev/plugin=" + kubernetes.PluginLabel(),
	})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the pods of this plugin while its executor runs: %v, %v; want one", list, err)
	}
	lease, err := c.cs.CoordinationV1().Leases(c.namespace).Get(ctx, kubernetes.LeaseName(), metav1.GetOptions{})
	if err != nil || lease.Labels["dsh-host.dev/plugin"] != kubernetes.PluginLabel() || lease.Spec.RenewTime == nil ||
		time.Since(lease.Spec.RenewTime.Time) > time.Minute || !lease.CreationTimestamp.Time.Before(list.Items[0].CreationTimestamp.Time.Add(time.Second)) {
		t.Errorf("this plugin's Lease while its executor runs: %+v, %v; want it labelled, renewed, and made before the pod", lease, err)
	}
	if err := x.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, list.Items[0].Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the executor's pod after Close: %v; want it gone", err)
	}
	if _, err := c.cs.CoordinationV1().Leases(c.namespace).Get(ctx, kubernetes.LeaseName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("this plugin's Lease after Close: %v; want it gone", err)
	}
}

// An image the node does not have, which the pod may not pull, fails the
// first call at once, with the pod's event saying why; the pod is deleted.
func TestAMissingImageSaysThePodsEvent(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": "dsh-test-missing:local", "imagePullPolicy": "Never"}))); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "ErrImageNeverPull") || !strings.Contains(err.Error(), "Warning ErrImageNeverPull: Container image \"dsh-test-missing:local\" is not present") {
		t.Errorf("a pod of a missing image: %v; want the pod's event, ErrImageNeverPull", err)
	}
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("a pod of a missing image failed after %s; want it at once, not at the start timeout", d)
	}
}

// A context the kubeconfig does not have is refused, naming it and the
// contexts there are, before anything is asked of a cluster.
func TestAWrongContextIsRefused(t *testing.T) {
	c := cluster(t)
	x := kubernetes.New()
	defer x.Close(t.Context())
	if err := x.Configure(t.Context(), []byte(c.settings(t, map[string]any{"image": c.image, "context": "no-such-context"}))); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), `"no-such-context"`) || !strings.Contains(err.Error(), os.Getenv("KUBECONFIG")) {
		t.Errorf("a context the kubeconfig lacks: %v; want it refused as invalid settings, naming it and the kubeconfig", err)
	}
}

// Settings without an image or a pod, or with both, are refused.
func TestAnImageOrAPod(t *testing.T) {
	for _, s := range []string{`{}`, `{"image": "a", "pod": "b"}`} {
		x := kubernetes.New()
		if err := x.Configure(t.Context(), []byte(s)); err != nil {
			t.Fatal(err)
		}
		_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
		if !errors.Is(err, pluginapi.ErrInvalidSettings) {
			t.Errorf("settings %s: %v; want them refused", s, err)
		}
		x.Close(t.Context())
	}
}
