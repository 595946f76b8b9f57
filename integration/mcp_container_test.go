package integration

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// containerPlugin builds the container executor's plugin, once, into a
// plugin directory of its own.
var containerPlugin = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(bins.dir, "container-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "dsh-executor-container"), "github.com/dsh-host/dsh-host/plugins/container/cmd/dsh-executor-container")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the container plugin: %v\n%s", err, out)
	}
	return dir, nil
})

// testEngine is the address of the named engine (.ci/run starts it and
// sets DSH_TEST_<NAME>_HOST): the test skips without it, and fails under
// CI=true.
func testEngine(t *testing.T, name string) string {
	t.Helper()
	v := "DSH_TEST_" + strings.ToUpper(name) + "_HOST"
	addr := os.Getenv(v)
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %s is not set; under CI=true .ci/run starts the engine and sets it", name, v)
		}
		t.Skipf("%s: no engine (set %s to its API address)", name, v)
	}
	return addr
}

// sessionContainers lists the container executor's containers that serve
// partition (an MCP session's id), asking the engine.
func sessionContainers(t *testing.T, addr, partition string) []string {
	t.Helper()
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ContainerList(context.Background(), client.ContainerListOptions{
		All: true, Filters: client.Filters{}.Add("label", "dev.dsh-host.executor=container", "dev.dsh-host.partition="+partition),
	})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	var ids []string
	for _, s := range list.Items {
		ids = append(ids, s.ID)
	}
	return ids
}

// awaitNoSessionContainers fails the test when partition still has a
// container after within.
func awaitNoSessionContainers(t *testing.T, addr, partition string, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ids := sessionContainers(t, addr, partition)
		if len(ids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: session %s's container %v is still there after %s", what, partition, ids, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// everyProcess prints what a command sees of every process in its
// container: ps, and each one's command line and environment in /proc.
const everyProcess = `ps -o pid,args 2>/dev/null || ps; for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline; echo; tr '\0' '\n' < $p/environ; done 2>/dev/null`

// Two MCP sessions over HTTP, with the container executor, do not share
// processes: from A, ps and /proc show none of B's job (its command line,
// the variable it exported), and A's kill of B's pid fails, B's job
// running on. Once A's session ends and its jobs' grace is over, A's
// container is gone (the engine says so) and B's is not; the server's
// end removes B's.
func TestMCPHTTPSessionsDoNotShareAContainersProcesses(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := testEngine(t, name)
			dir, err := containerPlugin()
			if err != nil {
				t.Fatal(err)
			}
			tag := scenario(t)
			settings := tokenSettings("idleTimeoutMs: 60000", "jobGraceMs: 500") +
				"shell:\n  engine: " + addr + "\n  image: " + cmp.Or(os.Getenv("DSH_TEST_IMAGE"), "dsh-test:local") + "\n  agent: " + bins.agent + "\n"
			srv := startHTTPServerArgs(t, tag, []string{"--plugin-dir", dir, "--executor", "container", "--settings", settingsFile(t, settings)}, "DSH_TEST_MCP_TOKEN="+testToken)
			a, _ := httpSession(t, srv.url, testToken)
			b, _ := httpSession(t, srv.url, testToken)
			idA, idB := a.ID(), b.ID()
			t.Cleanup(func() {
				srv.stop(t)
				awaitNoSessionContainers(t, addr, idA, 10*time.Second, "after the server's end")
				awaitNoSessionContainers(t, addr, idB, 10*time.Second, "after the server's end")
			})

			// B's job gets a pid beyond any of A's few commands: A's kill of
			// it names no process there, rather than, by chance, one of A's
			// own (its agent, whose end takes its container with it).
			if out, isErr := call(t, b, "bash", map[string]any{"command": `for i in {1..600}; do ( : ); done`}); isErr {
				t.Fatalf("B's forks: %s", out)
			}
			mark := fmt.Sprintf("session-b-secret-%d", time.Now().UnixNano())
			out, isErr := call(t, b, "bash", map[string]any{"command": "export MARK=" + mark + "; echo $$; exec sleep 7774", "run_in_background": true})
			if isErr {
				t.Fatalf("B's job: %s", out)
			}
			jobB := regexp.MustCompile(`job-\d+`).FindString(out)
			out, _ = call(t, b, "job_output", map[string]any{"job_id": jobB, "wait_ms": 20000})
			pidB := regexp.MustCompile(`^\d+`).FindString(out)
			if pidB == "" {
				t.Fatalf("B's job printed no pid: %q", out)
			}
			if out, isErr := call(t, a, "bash", map[string]any{"command": "exec sleep 6665", "run_in_background": true}); isErr {
				t.Fatalf("A's job: %s", out)
			}
			var fromA string
			for deadline := time.Now().Add(20 * time.Second); !strings.Contains(fromA, "sleep 6665"); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("A does not see its own job (sleep 6665), so what it does not see proves nothing:\n%s", fromA)
				}
				fromA, _ = call(t, a, "bash", map[string]any{"command": everyProcess})
			}
			if strings.Contains(fromA, "sleep 7774") || strings.Contains(fromA, mark) {
				t.Errorf("session A sees session B's job (sleep 7774, or its environment's %s):\n%s", mark, fromA)
			}
			fromB, _ := call(t, b, "bash", map[string]any{"command": everyProcess})
			if !strings.Contains(fromB, "sleep 7774") || strings.Contains(fromB, "sleep 6665") {
				t.Errorf("session B sees (want its own sleep 7774, none of A's sleep 6665):\n%s", fromB)
			}
			if out, _ := call(t, a, "bash", map[string]any{"command": "kill -KILL " + pidB + "; echo $?"}); strings.HasPrefix(out, "0\n") || !strings.Contains(out, "No such process") {
				t.Errorf("A's kill of B's pid %s: %q, want no such process", pidB, out)
			}
			time.Sleep(500 * time.Millisecond)
			if out, _ := call(t, b, "jobs", nil); !strings.Contains(out, jobB+"\trunning") {
				t.Errorf("B's job after A killed pid %s: %q, want it running", pidB, out)
			}

			if ids := sessionContainers(t, addr, idA); len(ids) != 1 {
				out, _ := call(t, a, "bash", map[string]any{"command": "hostname"})
				t.Fatalf("session A (%s) has %d containers, want 1 (A runs in %s)", idA, len(ids), out)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			awaitNoSessionContainers(t, addr, idA, 15*time.Second, "session A closed, its jobs' grace 500 ms")
			if ids := sessionContainers(t, addr, idB); len(ids) != 1 {
				t.Errorf("session B has %d containers after A's end, want 1", len(ids))
			}
			if out, _ := call(t, b, "jobs", nil); !strings.Contains(out, jobB+"\trunning") {
				t.Errorf("B's job after A's end: %q, want it running", out)
			}
		})
	}
}
