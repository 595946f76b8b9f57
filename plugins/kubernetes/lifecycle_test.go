package kubernetes_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// executorPod is the one pod of this test process's executors, which the
// test fails without.
func (c *testCluster) executorPod(t *testing.T) corev1.Pod {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "dsh-host.dev/executor=kubernetes,dsh-host.dev/plugin=" + kubernetes.PluginLabel(),
	})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("the pods of this plugin: %v, %v; want one", list, err)
	}
	return list.Items[0]
}

// runInBackground runs command on x, and returns once its first output
// came, with where its outcome will come.
func runInBackground(t *testing.T, x pluginapi.ShellExecutor, command string) <-chan outcome {
	t.Helper()
	ran, started := make(chan outcome, 1), make(chan struct{}, 1)
	go func() {
		res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: command}, func(pluginapi.Stream, []byte) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
		ran <- outcome{res, err}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the run's output did not come within 60s")
	}
	return ran
}

type outcome struct {
	res pluginapi.RunResult
	err error
}

// A pod deleted from outside, or evicted (the Eviction API), under a run
// settles the run as interrupted at once, saying so (an eviction's reason
// from the pod's status), with the output so far; the next call runs in
// a new pod, and the old one is gone by then.
func TestAPodDeletedUnderARunInterruptsIt(t *testing.T) {
	for _, how := range []string{"deleted", "evicted"} {
		t.Run(how, func(t *testing.T) {
			c := cluster(t)
			ctx := t.Context()
			x := kubernetes.New()
			defer x.Close(ctx)
			if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
				t.Fatal(err)
			}
			ran := runInBackground(t, x, "echo started; sleep 30")
			before := c.executorPod(t)
			began := time.Now()
			want := "deleted"
			if how == "deleted" {
				if err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, before.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			} else {
				want = "EvictionByEvictionAPI"
				if err := c.cs.CoreV1().Pods(c.namespace).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: before.Name}}); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case o := <-ran:
				if o.err != nil || o.res.ExitCode != nil || o.res.Stdout.Text != "started\n" ||
					!strings.Contains(o.res.Interrupted, "pod "+c.namespace+"/"+before.Name) || !strings.Contains(o.res.Interrupted, want) {
					t.Errorf("the run whose pod was %s: %+v, %v; want it interrupted, saying %q, with its output so far", how, o.res, o.err, want)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the run whose pod was %s was still waiting 20s after", how)
			}
			t.Logf("interrupted %s after the pod was %s", time.Since(began), how)
			res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo again"}, nil)
			if err != nil || res.Stdout.Text != "again\n" {
				t.Errorf("the call after the pod was %s: %+v, %v; want it to run", how, res, err)
			}
			if after := c.executorPod(t); after.UID == before.UID {
				t.Errorf("the call after the pod was %s ran in %s, the old pod; want a new one", how, after.Name)
			}
		})
	}
}

// Settings the created pod no longer fits (another pull policy) end its
// session and delete it, before the next call, which runs in a new pod;
// settings of the agent alone keep it.
func TestNewSettingsReplaceTheCreatedPod(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	run := func(settings map[string]any) corev1.Pod {
		t.Helper()
		if err := x.Configure(ctx, []byte(c.settings(t, settings))); err != nil {
			t.Fatal(err)
		}
		if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo ran"}, nil); err != nil || res.Stdout.Text != "ran\n" {
			t.Fatalf("a command with settings %v: %+v, %v", settings, res, err)
		}
		return c.executorPod(t)
	}
	first := run(map[string]any{"image": c.image})
	if again := run(map[string]any{"image": c.image, "defaultTimeoutMs": 5000}); again.UID != first.UID {
		t.Errorf("the agent's settings changed, and the commands ran in a new pod %s; want the same, %s", again.Name, first.Name)
	}
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "imagePullPolicy": "Never"}))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.CoreV1().Pods(c.namespace).Get(ctx, first.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod the new settings no longer fit, once they are configured: %v; want it gone", err)
	}
	second := run(map[string]any{"image": c.image, "imagePullPolicy": "Never"})
	if second.UID == first.UID {
		t.Errorf("the pod's settings changed, and the commands still ran in %s; want a new pod", first.Name)
	}
	if second.Spec.Containers[0].ImagePullPolicy != corev1.PullNever {
		t.Errorf("the new pod's pull policy: %s; want Never", second.Spec.Containers[0].ImagePullPolicy)
	}
}
