package container_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// A plugin SIGKILLed (as a host's SIGKILL leaves it, or worse: it cannot
// even close its executor) leaves no container and no process within 5 s:
// its attached stream closes, the agent kills what it started and exits,
// and the container removes itself. A background job and a setsid
// escapee in it go too.
func TestASIGKILLedPluginLeavesNoContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			x, pid := pluginapitest.LaunchPID(t, exec.Command(pluginBin))
			label := strconv.Itoa(pid) + "@" + startTime(t, pid)
			ctx := t.Context()
			if err := x.(pluginapi.Configurable).Configure(ctx, settings(t, addr, nil)); err != nil {
				t.Fatal(err)
			}
			spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "setsid sleep 1001 & sleep 1002"})
			if err != nil {
				t.Fatal(err)
			}
			job, err := x.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if !waitForSleeps(t, addr, label) {
				r, err := job.ReadOutput(ctx)
				t.Fatalf("the job's sleeps did not run in a container of the plugin's within 30s; its output %q, %v", r.Delta, err)
			}

			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			requireNoContainersOf(t, addr, label, 5*time.Second)
		})
	}
}

// waitForSleeps waits until both sleeps run in the plugin's container;
// false when they did not within 30 s.
func waitForSleeps(t *testing.T, addr, label string) bool {
	t.Helper()
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := c.ContainerList(context.Background(), client.ContainerListOptions{
			Filters: client.Filters{}.Add("label", "dev.dsh-host.plugin="+label),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 1 {
			top, err := c.ContainerTop(context.Background(), list.Items[0].ID, client.ContainerTopOptions{})
			if err == nil {
				var n int
				for _, p := range top.Processes {
					if isSleep(p) {
						n++
					}
				}
				if n == 2 {
					return true
				}
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isSleep says whether a row of an engine's top is one of the job's
// sleeps (not the shell whose command line names them). Docker's rows
// end with the command; Podman's are one column "PID USER COMMAND".
func isSleep(row []string) bool {
	f := strings.Fields(strings.Join(row, " "))
	n := len(f)
	return n >= 3 && f[n-2] == "sleep" && (f[n-1] == "1001" || f[n-1] == "1002") && f[n-3] != "&"
}

// startTime is a process's start time, as the executor labels it.
func startTime(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[19]
}
