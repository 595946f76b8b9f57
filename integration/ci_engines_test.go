package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// .ci/engines' stop_engines removes every container of its engines before
// it stops them: a container still running at the end (here one made by
// hand in each engine, as a person would) leaves no process behind, not
// its command and not podman's conmon. The engines are a pair of their
// own, started by the script as CI starts them.
func TestCIStopEnginesRemovesEveryContainer(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "the engines need root")
	}
	for _, tool := range []string{"dockerd", "docker", "podman", "busybox", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "no %s: %v", tool, err)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// Each engine runs a container; the script says where its state is
	// and the container's pid, then stops the engines.
	script := `set -e
. .ci/engines >/dev/null
echo "DIR $engines_dir"
for sock in docker podman; do
  export DOCKER_HOST=unix://$engines_dir/$sock.sock
  id=$(docker run -d --network none "$DSH_TEST_IMAGE" sleep 1000)
  echo "PID $sock $(docker inspect -f '{{.State.Pid}}' "$id")"
done
stop_engines
echo STOPPED
`
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 10 * time.Second
	done := time.AfterFunc(5*time.Minute, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	defer done.Stop()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the script: %v\n%s", err, out)
	}
	var dir string
	pids := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "DIR":
			dir = f[1]
		case len(f) == 3 && f[0] == "PID":
			pids[f[1]], _ = strconv.Atoi(f[2])
		}
	}
	if dir == "" || pids["docker"] <= 0 || pids["podman"] <= 0 || !strings.Contains(string(out), "STOPPED") {
		t.Fatalf("the script said %q: want its directory, a container pid per engine, and STOPPED", out)
	}
	// Whatever stop_engines left goes now, so that no test leaves it, and
	// after saying so.
	var left []string
	defer func() {
		for _, p := range left {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		for name, pid := range pids {
			if argv := argvOf(pid); len(argv) > 0 && argv[0] == "sleep" {
				left = append(left, strconv.Itoa(pid)+" ("+name+"'s container: "+strings.Join(argv, " ")+")")
			}
		}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if argv := argvOf(pid); strings.Contains(strings.Join(argv, " "), dir) {
				left = append(left, strconv.Itoa(pid)+" ("+strings.Join(argv, " ")+")")
			}
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running after stop_engines: %v", left)
		}
	}
}
