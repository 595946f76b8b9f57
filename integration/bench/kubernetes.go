package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dsh-host/dsh-host/host"
)

// kubernetesTarget is the cluster the kubernetes step measures against:
// the kubeconfig as kubectl finds it (KUBECONFIG, then ~/.kube/config),
// the namespace of DSH_BENCH_K8S_NAMESPACE (DSH_TEST_K8S_NAMESPACE by
// default), the image of DSH_BENCH_K8S_IMAGE (DSH_TEST_K8S_IMAGE by
// default), and the kubectl of DSH_BENCH_KUBECTL (DSH_TEST_K8S_KUBECTL by
// default: the one built with the cluster). .ci/k8s starts a cluster and
// exports the DSH_TEST_K8S_ ones. ok is false when one is missing.
func kubernetesTarget() (namespace, image, kubectl string, ok bool) {
	namespace = envOr("DSH_BENCH_K8S_NAMESPACE", "DSH_TEST_K8S_NAMESPACE")
	image = envOr("DSH_BENCH_K8S_IMAGE", "DSH_TEST_K8S_IMAGE")
	kubectl = envOr("DSH_BENCH_KUBECTL", "DSH_TEST_K8S_KUBECTL")
	return namespace, image, kubectl, namespace != "" && image != "" && kubectl != ""
}

// envOr is the variable name's value, else fallback's.
func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return os.Getenv(fallback)
}

// coldPodRuns is how many new executors the cold pod start is the median
// of: each creates, starts and deletes a pod.
const coldPodRuns = 3

// benchPodLabel marks the pod this step creates for kubectl exec.
const benchPodLabel = "dsh-host.dev/bench"

// kubernetesLatency is run(true) through the kubernetes executor's plugin
// (bin/plugins/dsh-executor-kubernetes beside dsh-host, its agent in
// bin/agent; warm: its pod running and the agent in), against `kubectl
// exec POD -- true` as a user runs it (a new kubectl process per command,
// into a running pod of the same image), and against the container
// executor's plugin when the container step's engine is set
// (DSH_BENCH_DOCKER_HOST): interleaved, in the same run. Then the cold
// start: a new executor's first command, its pod created, running, the
// agent brought in, the command done. Nothing it made stays on the
// cluster: its pod, and the executors' (which their Close deletes), are
// checked gone.
func kubernetesLatency(ctx context.Context, bin string, n, warmup int) ([]figure, error) {
	namespace, image, kubectl, ok := kubernetesTarget()
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: kubernetes step NOT MEASURED: set KUBECONFIG, and DSH_BENCH_K8S_NAMESPACE, DSH_BENCH_K8S_IMAGE and DSH_BENCH_KUBECTL (or the DSH_TEST_K8S_ ones .ci/k8s exports when it starts a cluster)")
		return nil, nil
	}
	cs, err := kubernetesClient()
	if err != nil {
		return nil, err
	}
	before, err := executorPods(ctx, cs, namespace)
	if err != nil {
		return nil, err
	}
	figures, err := kubernetesFigures(ctx, cs, bin, namespace, image, kubectl, n, warmup)
	if err == nil {
		err = noPodsLeft(ctx, cs, namespace, before)
	}
	if err != nil {
		return nil, err
	}
	return figures, nil
}

func kubernetesFigures(ctx context.Context, cs k8s.Interface, bin, namespace, image, kubectl string, n, warmup int) ([]figure, error) {
	settings, _ := json.Marshal(map[string]any{"namespace": namespace, "image": image})
	options := host.Options{
		Executor: host.Executor{Name: "kubernetes", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-kubernetes")},
		Settings: settings,
	}
	h, err := host.Launch(ctx, options)
	if err != nil {
		return nil, err
	}
	defer h.Close(context.WithoutCancel(ctx))
	inPod := h.Shell()
	if err := runTrue(ctx, inPod); err != nil { // the pod starts, the agent comes in
		return nil, err
	}

	pod, err := benchPod(ctx, cs, namespace, image)
	if pod != "" {
		defer deletePod(context.WithoutCancel(ctx), cs, namespace, pod)
	}
	if err != nil {
		return nil, err
	}
	kubectlExec := func() error {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, kubectl, "--namespace", namespace, "exec", pod, "--", "true")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s exec %s -- true: %w: %s", kubectl, pod, err, bytes.TrimSpace(stderr.Bytes()))
		}
		return nil
	}
	fns := []func() error{func() error { return runTrue(ctx, inPod) }, kubectlExec}

	addr, containerImage := containerEngine()
	if addr != "" {
		settings, _ := json.Marshal(map[string]any{"engine": addr, "image": containerImage})
		hc, err := host.Launch(ctx, host.Options{
			Executor: host.Executor{Name: "container", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-container")},
			Settings: settings,
		})
		if err != nil {
			return nil, err
		}
		defer hc.Close(context.WithoutCancel(ctx))
		inContainer := hc.Shell()
		if err := runTrue(ctx, inContainer); err != nil { // the container starts
			return nil, err
		}
		fns = append(fns, func() error { return runTrue(ctx, inContainer) })
	} else {
		fmt.Fprintln(os.Stderr, "bench: kubernetes_vs_container_true_ratio NOT MEASURED: set DSH_BENCH_DOCKER_HOST (and DSH_BENCH_IMAGE), as for the container step")
	}

	times, err := interleave(n/5, warmup/5, fns...)
	if err != nil {
		return nil, err
	}
	executor, perCommand := median(times[0]), median(times[1])
	cold, err := coldPodStart(ctx, options)
	if err != nil {
		return nil, err
	}
	pooled, _ := json.Marshal(map[string]any{"namespace": namespace, "image": image, "pool": 1})
	claim, err := poolClaim(ctx, cs, namespace, host.Options{Executor: options.Executor, Settings: pooled})
	if err != nil {
		return nil, err
	}
	figures := []figure{
		{"kubernetes_exec_vs_executor_speedup", perCommand / executor, "x", ">=", 10},
	}
	if addr != "" {
		figures = append(figures, figure{"kubernetes_vs_container_true_ratio", executor / median(times[2]), "x", "<=", 2})
	}
	return append(figures,
		figure{"kubernetes_true_median", executor, "ms", ">=", 0},
		figure{"kubernetes_kubectl_exec_true_median", perCommand, "ms", ">=", 0},
		figure{"kubernetes_pool_claim_ms", claim, "ms", "<=", 100},
		figure{"kubernetes_cold_pod_start_ms", cold, "ms", ">=", 0},
	), nil
}

// coldPodStart is the median, over coldPodRuns new executors, of the
// first command's time: the pod created and running, the agent brought
// in and checked, `true` run. The plugin's own start is not counted.
func coldPodStart(ctx context.Context, options host.Options) (float64, error) {
	var times []float64
	for range coldPodRuns {
		h, err := host.Launch(ctx, options)
		if err != nil {
			return 0, err
		}
		began := time.Now()
		err = runTrue(ctx, h.Shell())
		took := float64(time.Since(began)) / float64(time.Millisecond)
		if cerr := h.Close(context.WithoutCancel(ctx)); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		times = append(times, took)
	}
	return median(times), nil
}

// poolClaim is the median, over coldPodRuns new executors with a warm
// pool of one pod, of the first command's time once the pool's pod is
// ready (its agent started): the claim, the session's start over the
// agent's stream, `true` run.
func poolClaim(ctx context.Context, cs k8s.Interface, namespace string, options host.Options) (float64, error) {
	var times []float64
	for range coldPodRuns {
		h, err := host.Launch(ctx, options)
		if err != nil {
			return 0, err
		}
		took, err := func() (float64, error) {
			defer h.Close(context.WithoutCancel(ctx))
			if err := waitPoolReady(ctx, cs, namespace); err != nil {
				return 0, err
			}
			began := time.Now()
			err := runTrue(ctx, h.Shell())
			return float64(time.Since(began)) / float64(time.Millisecond), err
		}()
		if err != nil {
			return 0, err
		}
		times = append(times, took)
	}
	return median(times), nil
}

// waitPoolReady waits until a pod of the namespace is labelled ready in
// a pool (the step runs one pool at a time).
func waitPoolReady(ctx context.Context, cs k8s.Interface, namespace string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "dsh-host.dev/pool=ready"})
		if err != nil {
			return fmt.Errorf("waiting for the pool's pod: %w", err)
		}
		if len(list.Items) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no pool pod ready in %s: %w", namespace, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// kubernetesClient is a client of the cluster the kubeconfig names, found
// as kubectl and the executor find it.
func kubernetesClient() (k8s.Interface, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the kubeconfig: %w", err)
	}
	return k8s.NewForConfig(cfg)
}

// benchPod runs a pod of image for kubectl exec, and returns its name
// once it runs (and its name with an error when it was made but does not
// run: the caller deletes it).
func benchPod(ctx context.Context, cs k8s.Interface, namespace, image string) (string, error) {
	pods := cs.CoreV1().Pods(namespace)
	p, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-bench-kubectl-", Labels: map[string]string{benchPodLabel: "kubectl-exec"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: new(int64(1)),
			AutomountServiceAccountToken:  new(false),
			Containers: []corev1.Container{{
				Name: "main", Image: image,
				Command: []string{"bash", "-c", `trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating the pod for kubectl exec in %s: %w", namespace, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return p.Name, err
		}
		if got.Status.Phase == corev1.PodRunning {
			return p.Name, nil
		}
		if got.Status.Phase == corev1.PodFailed || time.Now().After(deadline) {
			return p.Name, fmt.Errorf("the pod %s/%s for kubectl exec did not run: %s", namespace, p.Name, got.Status.Phase)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deletePod deletes the pod name and waits until it is gone.
func deletePod(ctx context.Context, cs k8s.Interface, namespace, name string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods(namespace)
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		fmt.Fprintf(os.Stderr, "bench: deleting the pod %s/%s: %v\n", namespace, name, err)
		return
	}
	for ctx.Err() == nil {
		if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// executorPods names the pods of the namespace the kubernetes executor
// or this step created (by their labels).
func executorPods(ctx context.Context, cs k8s.Interface, namespace string) ([]string, error) {
	var names []string
	for _, sel := range []string{"dsh-host.dev/executor=kubernetes", benchPodLabel} {
		list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("listing the pods of %s: %w", namespace, err)
		}
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
	}
	return names, nil
}

// noPodsLeft fails when a pod of the executor's or this step's, not there
// before the step, is still in the namespace.
func noPodsLeft(ctx context.Context, cs k8s.Interface, namespace string, before []string) error {
	after, err := executorPods(ctx, cs, namespace)
	if err != nil {
		return err
	}
	var left []string
	for _, name := range after {
		if !slices.Contains(before, name) {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		return errors.New("the kubernetes step left pods in " + namespace + ": " + fmt.Sprint(left))
	}
	return nil
}
