package kubernetes_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/k8stestlock"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// A restart of the API server, or of the kubelet (which carries the exec
// stream from the API server to the container runtime), under a run drops
// the agent's exec stream: the run settles as interrupted, with its output
// so far, never as a success; the agent, its stdin closed, kills what it
// ran; and the next call reconnects to the same pod (its name and UID),
// where a file an earlier command left in /tmp is still there. The run's
// sleep is looked for in this machine's /proc: the cluster's only node is
// this machine.
func TestARestartInterruptsTheRun(t *testing.T) {
	for _, daemon := range []string{"kube-apiserver", "kubelet"} {
		t.Run(daemon, func(t *testing.T) { restartUnderARun(t, daemon) })
	}
}

func restartUnderARun(t *testing.T, daemon string) {
	c := cluster(t)
	// Other packages' tests of the cluster (integration's) wait until the
	// API server is back.
	k8stestlock.Exclusive(t)
	restart := os.Getenv("DSH_TEST_K8S_RESTART")
	if restart == "" {
		t.Fatal("DSH_TEST_K8S_RESTART is not set (.ci/k8s sets it)")
	}
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo kept > /tmp/dsh-restart-mark"}, nil); err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("leaving a file in /tmp: %+v, %v", res, err)
	}
	before := c.executorPod(t)
	ran := runInBackground(t, x, "echo started; sleep 1007")
	if out, err := exec.Command(restart, daemon).CombinedOutput(); err != nil {
		t.Fatalf("restarting %s: %v: %s", daemon, err, out)
	}
	select {
	case o := <-ran:
		if o.err != nil || o.res.ExitCode != nil || o.res.Stdout.Text != "started\n" || !strings.Contains(o.res.Interrupted, "ended under the command") {
			t.Errorf("the run whose stream dropped with %s: %+v, %v; want a result interrupted by the lost session, with its output so far", daemon, o.res, o.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the run whose stream dropped was still waiting 60s after %s's restart", daemon)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command("pgrep", "-f", "sleep 1007").Output()
		if _, missing := err.(*exec.Error); missing {
			t.Fatalf("pgrep: %v", err)
		}
		if len(strings.TrimSpace(string(out))) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's sleep outlived its dropped stream by 10s: pids %s", out)
		}
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "cat /tmp/dsh-restart-mark"}, nil); err != nil || res.Stdout.Text != "kept\n" {
		t.Errorf("the call after the restart: %q, %v; want it to run where the file left before is", res.Stdout.Text, err)
	}
	if after := c.executorPod(t); after.Name != before.Name || after.UID != before.UID {
		t.Errorf("the pod after the restart: %s (%s); want the same as before, %s (%s)", after.Name, after.UID, before.Name, before.UID)
	}
}
