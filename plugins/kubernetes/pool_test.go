package kubernetes_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// poolPods are this plugin's pods whose pool label is state.
func (c *testCluster) poolPods(t *testing.T, state string) []string {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "dsh-host.dev/plugin=" + kubernetes.PluginLabel() + ",dsh-host.dev/pool=" + state,
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

// waitPool waits until n of this plugin's pods are labelled state, and
// returns them.
func (c *testCluster) waitPool(t *testing.T, state string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got := c.poolPods(t, state)
		if len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool pods %s: %v; want %d", state, got, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// With pool: N, N pods are made ready, each with its agent started,
// before any command; the first command runs in one of them (a pod made
// before the call) and a replacement is started; new settings replace the
// ready pods; Close deletes them all.
func TestAWarmPoolServesTheFirstCommand(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	settings := map[string]any{"image": c.image, "pool": 2, "sandboxPolicy": map[string]any{"defaultMode": "workspace-write"}}
	if err := x.Configure(ctx, []byte(c.settings(t, settings))); err != nil {
		t.Fatal(err)
	}
	ready := c.waitPool(t, "ready", 2)

	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo $HOSTNAME"}, nil)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("the first command: %+v, %v", res, err)
	}
	ran := strings.TrimSpace(res.Stdout.Text)
	if !slices.Contains(ready, ran) {
		t.Fatalf("the first command ran in %q; want one of the pool's ready pods %v", ran, ready)
	}
	if res.Sandbox == nil || res.Sandbox.Mode != pluginapi.SandboxWorkspaceWrite {
		t.Errorf("the claimed pod's facts: %+v; want its mode's", res.Sandbox)
	}
	if got := c.waitPool(t, "claimed", 1); got[0] != ran {
		t.Errorf("the claimed pod: %v; want %s", got, ran)
	}
	refilled := c.waitPool(t, "ready", 2)
	if slices.Contains(refilled, ran) {
		t.Errorf("ready pods after the claim %v hold the claimed one", refilled)
	}
	// The session keeps its pod.
	res, err = pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo $HOSTNAME"}, nil)
	if err != nil || strings.TrimSpace(res.Stdout.Text) != ran {
		t.Errorf("the next command: %+v, %v; want it in %s", res, err, ran)
	}

	// Other settings: the ready pods no longer fit, and go.
	settings["pool"] = 1
	settings["startTimeoutMs"] = 60000
	if err := x.Configure(ctx, []byte(c.settings(t, settings))); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		now := c.poolPods(t, "ready")
		if len(now) == 1 && !slices.Contains(refilled, now[0]) {
			break // the old ones gone, one new one ready
		}
		if time.Now().After(deadline) {
			t.Fatalf("ready pods after new settings: %v; want one new one, the old ones %v gone", now, refilled)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := x.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := append(c.poolPods(t, "ready"), c.poolPods(t, "claimed")...); len(left) != 0 {
		t.Errorf("pool pods after Close: %v", left)
	}
}

// An attached pod has no pool: the setting is refused with pod or
// selector.
func TestAPoolForAnAttachedPodIsRefused(t *testing.T) {
	for _, settings := range []string{`{"pod": "p", "pool": 1}`, `{"selector": "app=agent", "pool": 2}`} {
		x := kubernetes.New()
		err := x.Configure(t.Context(), []byte(settings))
		if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), "pool") {
			t.Errorf("Configure(%s): %v; want it refused, naming pool", settings, err)
		}
		x.Close(t.Context())
	}
}
