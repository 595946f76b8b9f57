package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// partitionRun runs command in partition and returns its stdout, failing
// the test when it could not run.
func partitionRun(t *testing.T, x pluginapi.ShellExecutor, partition, command string) string {
	t.Helper()
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: command, Partition: partition}, nil)
	if err != nil {
		t.Fatalf("%s in partition %q: %v", command, partition, err)
	}
	return res.Stdout.Text
}

// partitionJob starts command in the background in partition, with mark
// in its environment, and returns it with the pid its shell printed.
func partitionJob(t *testing.T, x pluginapi.ShellExecutor, partition, command, mark string) (pluginapi.ShellProcess, int) {
	t.Helper()
	ctx := t.Context()
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "echo $$; exec " + command, Partition: partition,
		DshEnv: map[string]string{"DSH_PARTITION_MARK": mark}})
	if err != nil {
		t.Fatal(err)
	}
	job, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(out, "\n"); time.Sleep(20 * time.Millisecond) {
		r, err := job.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out += r.Delta
		if time.Now().After(deadline) {
			t.Fatalf("job %q in partition %q printed no pid within 60 s: %q", command, partition, out)
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("job %q printed %q, not its pid", command, out)
	}
	return job, pid
}

// seen lists what a command sees of every process in its pod: each
// one's command line and environment in /proc.
const seen = `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done 2>/dev/null`

// partitionPods are the names of this process's pods that serve
// partition.
func (c *testCluster) partitionPods(t *testing.T, partition string) []string {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(t.Context(), metav1.ListOptions{
		LabelSelector: "dsh-host.dev/plugin=" + kubernetes.PluginLabel() + ",dsh-host.dev/partition=" + partition,
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
	return names
}

// Requests of two partitions run in pods of their own, each labelled with
// its partition: from A, /proc shows none of B's processes (neither its
// job's command line nor its environment), and A's kill of B's pid fails
// with B's job running on; each sees its own. ClosePartition deletes A's
// pod, killing A's job, and leaves B's job running; Close deletes B's.
func TestPartitionsDoNotSharePods(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	markA := fmt.Sprintf("mark-a-%d", time.Now().UnixNano())
	markB := fmt.Sprintf("mark-b-%d", time.Now().UnixNano())
	jobA, _ := partitionJob(t, x, "session-A", "sleep 6661", markA)
	// B's job gets a pid beyond any that A's few commands reach: A's kill
	// of it names no process there, rather than, by chance, A's own.
	partitionRun(t, x, "session-B", `for i in {1..600}; do ( : ); done`)
	jobB, pidB := partitionJob(t, x, "session-B", "sleep 7772", markB)

	a, b := c.partitionPods(t, "session-A"), c.partitionPods(t, "session-B")
	if len(a) != 1 || len(b) != 1 || a[0] == b[0] {
		t.Fatalf("the partitions' pods: A %v, B %v; want one each, not the same", a, b)
	}
	fromA := partitionRun(t, x, "session-A", seen)
	if !strings.Contains(fromA, "sleep 6661") || !strings.Contains(fromA, markA) {
		t.Fatalf("A does not see its own job (sleep 6661, %s), so what it does not see proves nothing:\n%s", markA, fromA)
	}
	if strings.Contains(fromA, "sleep 7772") || strings.Contains(fromA, markB) {
		t.Errorf("A sees B's job (sleep 7772 or its environment's %s):\n%s", markB, fromA)
	}
	if out := partitionRun(t, x, "session-A", fmt.Sprintf("kill -KILL %d; echo $?", pidB)); out == "0\n" {
		t.Errorf("A's kill of B's pid %d succeeded", pidB)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	_, err := jobB.Wait(wctx)
	cancel()
	if err == nil {
		t.Fatalf("B's job ended after A killed pid %d", pidB)
	}

	if err := pluginapi.ClosePartition(ctx, x, "session-A"); err != nil {
		t.Fatal(err)
	}
	if left := c.partitionPods(t, "session-A"); len(left) != 0 {
		t.Errorf("A's pod %v is still there after ClosePartition", left)
	}
	wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	exitA, err := jobA.Wait(wctx)
	cancel()
	if err != nil || !exitA.Killed {
		t.Errorf("A's job with its partition closed: %+v, %v; want it killed", exitA, err)
	}
	wctx, cancel = context.WithTimeout(ctx, time.Second)
	_, err = jobB.Wait(wctx)
	cancel()
	if err == nil {
		t.Error("B's job ended with A's partition")
	}
	if out := partitionRun(t, x, "session-B", "echo still here"); out != "still here\n" {
		t.Errorf("B after A's end: %q", out)
	}
	if got := c.partitionPods(t, "session-B"); len(got) != 1 || got[0] != b[0] {
		t.Errorf("B's pods after A's end: %v; want its own, %s", got, b[0])
	}
}

// With podPerSession off, partitions share the pod (one client's calls);
// maxSessions bounds the partitions with pods of their own, and a
// partition ended makes room.
func TestPartitionSettings(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	t.Run("shared", func(t *testing.T) {
		x := kubernetes.New()
		defer x.Close(ctx)
		if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "podPerSession": false}))); err != nil {
			t.Fatal(err)
		}
		a, b := partitionRun(t, x, "session-A", "hostname"), partitionRun(t, x, "session-B", "hostname")
		if a != b {
			t.Errorf("with podPerSession off, the partitions ran in pods %q and %q; want one", a, b)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		x := kubernetes.New()
		defer x.Close(ctx)
		if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "maxSessions": 1}))); err != nil {
			t.Fatal(err)
		}
		partitionRun(t, x, "session-A", "true")
		_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Partition: "session-B"}, nil)
		if !errors.Is(err, pluginapi.ErrInvalidRequest) || !strings.Contains(fmt.Sprint(err), "shell.maxSessions") {
			t.Errorf("a second partition past maxSessions 1: %v; want ErrInvalidRequest naming shell.maxSessions", err)
		}
		if err := pluginapi.ClosePartition(ctx, x, "session-A"); err != nil {
			t.Fatal(err)
		}
		partitionRun(t, x, "session-B", "true")
	})
}
