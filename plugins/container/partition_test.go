package container_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// partitionRun runs command in partition and returns its stdout, failing
// the test when it could not run.
func partitionRun(t *testing.T, x pluginapi.ShellExecutor, partition, command string) (string, int) {
	t.Helper()
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: command, Partition: partition}, nil)
	if err != nil {
		t.Fatalf("%s in partition %q: %v", command, partition, err)
	}
	return res.Stdout.Text, code(res)
}

// partitionJob starts command in the background in partition, with a mark
// in its environment, and returns it with the pid its shell printed.
func partitionJob(t *testing.T, x pluginapi.ShellExecutor, partition, command, mark string) (pluginapi.ShellProcess, int) {
	t.Helper()
	ctx := t.Context()
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "echo $$; exec " + command, Partition: partition,
		DshEnv: map[string]string{"DSH_PARTITION_MARK": mark}})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Partition != partition {
		t.Fatalf("Resolve gave partition %q, want %q", spec.Partition, partition)
	}
	job, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out, "\n"); time.Sleep(20 * time.Millisecond) {
		r, err := job.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out += r.Delta
		if time.Now().After(deadline) {
			t.Fatalf("job %q in partition %q printed no pid within 30 s: %q", command, partition, out)
		}
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("job %q printed %q, not its pid", command, out)
	}
	return job, pid
}

// seen lists what a command in partition sees of every process in its
// container: ps, and each process's command line and environment in /proc.
const seen = `ps -o pid,args 2>/dev/null || ps; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done 2>/dev/null`

// pidsAhead forks 600 times, so that a job started after it has a pid
// beyond any that a few commands of another container reach: a kill of
// that pid there names no process, rather than, by chance, one of that
// container's own (its agent, whose end takes the container with it).
const pidsAhead = `for i in {1..600}; do ( : ); done`

// partitionContainers lists the containers serving partition.
func partitionContainers(t *testing.T, addr, label, partition string) []string {
	t.Helper()
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: client.Filters{}.Add("label", "dev.dsh-host.plugin="+label, "dev.dsh-host.partition="+partition),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range list.Items {
		ids = append(ids, s.ID)
	}
	return ids
}

// Requests of two partitions, through the real plugin, run in containers
// of their own: from A, ps and /proc show none of B's processes (neither
// its job's command line nor its environment), B's spill file is not
// there, and A's kill of B's pid fails and B's job runs on; each still
// sees its own. ClosePartition removes
// A's container (asked of the engine) and leaves B's job running; the
// plugin's end removes B's.
func TestPartitionsDoNotShareProcesses(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			var label string
			// Registered first, so run last: after the plugin's end.
			t.Cleanup(func() {
				if label != "" {
					requireNoContainersOf(t, addr, label, 10*time.Second)
				}
			})
			x, pid := pluginapitest.LaunchPID(t, exec.Command(pluginBin))
			label = strconv.Itoa(pid) + "@" + startTime(t, pid)
			ctx := t.Context()
			if err := x.(pluginapi.Configurable).Configure(ctx, settings(t, addr, nil)); err != nil {
				t.Fatal(err)
			}
			markA := fmt.Sprintf("mark-a-%d", time.Now().UnixNano())
			markB := fmt.Sprintf("mark-b-%d", time.Now().UnixNano())
			_, _ = partitionJob(t, x, "session-A", "sleep 6661", markA)
			partitionRun(t, x, "session-B", pidsAhead)
			jobB, pidB := partitionJob(t, x, "session-B", "sleep 7772", markB)

			fromA, _ := partitionRun(t, x, "session-A", seen)
			if !strings.Contains(fromA, "sleep 6661") || !strings.Contains(fromA, markA) {
				t.Fatalf("A does not see its own job (sleep 6661, %s), so what it does not see proves nothing:\n%s", markA, fromA)
			}
			if strings.Contains(fromA, "sleep 7772") || strings.Contains(fromA, markB) {
				t.Errorf("A sees B's job (sleep 7772 or its environment's %s):\n%s", markB, fromA)
			}
			// B's spill files are in B's container, not in A's.
			spillB, _ := jobB.(pluginapi.SpillNamer).SpillPaths()
			if spillB == "" {
				t.Fatal("B's job names no spill file")
			}
			probe := "test -e " + spillB + " && echo there || echo absent"
			if out, _ := partitionRun(t, x, "session-B", probe); out != "there\n" {
				t.Fatalf("B's spill %s from B: %q, want there", spillB, out)
			}
			if out, _ := partitionRun(t, x, "session-A", probe); out != "absent\n" {
				t.Errorf("B's spill %s from A: %q, want absent", spillB, out)
			}
			fromB, _ := partitionRun(t, x, "session-B", seen)
			if !strings.Contains(fromB, "sleep 7772") || strings.Contains(fromB, "sleep 6661") || strings.Contains(fromB, markA) {
				t.Errorf("B sees (want its own job, sleep 7772, and none of A's, sleep 6661 %s):\n%s", markA, fromB)
			}

			// A's kill of B's pid fails: no such process where A runs.
			if out, code := partitionRun(t, x, "session-A", fmt.Sprintf("kill -KILL %d; echo $?", pidB)); out == "0\n" || code != 0 {
				t.Errorf("A's kill of B's pid %d: %q (exit %d), want it refused", pidB, out, code)
			}
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := jobB.Wait(wctx)
			cancel()
			if err == nil {
				t.Fatalf("B's job ended after A killed pid %d", pidB)
			}

			jobA, _ := partitionJob(t, x, "session-A", "sleep 6663", markA)
			if n := len(partitionContainers(t, addr, label, "session-A")); n != 1 {
				t.Fatalf("%d containers serve partition A, want 1", n)
			}
			if err := pluginapi.ClosePartition(ctx, x, "session-A"); err != nil {
				t.Fatal(err)
			}
			if ids := partitionContainers(t, addr, label, "session-A"); len(ids) != 0 {
				t.Errorf("A's container %v is still there after ClosePartition", ids)
			}
			wctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			exitA, err := jobA.Wait(wctx)
			cancel()
			if err != nil {
				t.Errorf("A's job did not end with its partition: %v", err)
			} else if !exitA.Killed {
				t.Errorf("A's job ended as %+v, want killed", exitA)
			}
			wctx, cancel = context.WithTimeout(ctx, time.Second)
			_, err = jobB.Wait(wctx)
			cancel()
			if err == nil {
				t.Errorf("B's job ended with A's partition")
			}
			if out, _ := partitionRun(t, x, "session-B", "echo still here"); out != "still here\n" {
				t.Errorf("B after A's end: %q", out)
			}
			if n := len(partitionContainers(t, addr, label, "session-B")); n != 1 {
				t.Errorf("%d containers serve partition B, want 1", n)
			}
		})
	}
}

// With containerPerSession off, partitions share the container (one
// client's calls); maxSessions bounds the partitions with containers of
// their own, and a partition ended makes room.
func TestPartitionSettings(t *testing.T) {
	addr := engine(t, "docker")
	t.Run("shared", func(t *testing.T) { sharedPartitions(t, addr) })
	t.Run("bounded", func(t *testing.T) { boundedPartitions(t, addr) })
}

func sharedPartitions(t *testing.T, addr string) {
	shared := newExecutor(t, addr, map[string]any{"containerPerSession": false})
	a, _ := partitionRun(t, shared, "session-A", "hostname")
	b, _ := partitionRun(t, shared, "session-B", "hostname")
	if a != b {
		t.Errorf("with containerPerSession off, the partitions ran in containers %q and %q, want one", a, b)
	}
	if err := pluginapi.ClosePartition(t.Context(), shared, ""); err != nil {
		t.Fatal(err)
	}
	if c, _ := partitionRun(t, shared, "session-C", "hostname"); c != a {
		t.Errorf("ClosePartition(\"\") with containerPerSession off ended the shared container %q (now %q)", a, c)
	}
}

func boundedPartitions(t *testing.T, addr string) {
	bounded := newExecutor(t, addr, map[string]any{"maxSessions": 1})
	partitionRun(t, bounded, "session-A", "true")
	_, err := pluginapi.RunRequest(t.Context(), bounded, pluginapi.ExecRequest{Command: "true", Partition: "session-B"}, nil)
	if !errors.Is(err, pluginapi.ErrInvalidRequest) || !strings.Contains(fmt.Sprint(err), "shell.maxSessions") {
		t.Errorf("a second partition past maxSessions 1: %v, want ErrInvalidRequest naming shell.maxSessions", err)
	}
	if err := pluginapi.ClosePartition(t.Context(), bounded, "session-A"); err != nil {
		t.Fatal(err)
	}
	partitionRun(t, bounded, "session-B", "true")
}
