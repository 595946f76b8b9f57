package localexec

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// sweepChildEnv marks the copy of this test binary that runs as the init
// of a PID namespace of its own.
const sweepChildEnv = "DSH_LOCALEXEC_SWEEP_CHILD"

// In a PID namespace of its own (this test binary, again, as its init,
// with a /proc of that namespace), the sweep kills what a run leaves that
// no tag names (env -i, setsid, a double fork, an empty environment) and
// counts it in the run's result, and spares what a live job runs: its
// children and its tagged orphans. It needs root, for the namespaces.
func TestSweepInAPIDNamespaceOfItsOwn(t *testing.T) {
	if os.Getenv(sweepChildEnv) == "1" {
		sweepAsInit(t)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs the tests as root: this one needs new PID and mount namespaces")
		}
		t.Skip("a new PID namespace needs root")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepInAPIDNamespaceOfItsOwn$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), sweepChildEnv+"=1")
	// The namespace's processes die with its init, and the init with this
	// test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSweepInAPIDNamespaceOfItsOwn") {
		t.Fatalf("the test as a PID namespace's init: %v\n%s", err, out)
	}
}

// sweepAsInit is the test in the namespace: it mounts that namespace's
// /proc first, and stops unless /proc then names it pid 1 (the sweep must
// never see this machine's processes).
func sweepAsInit(t *testing.T) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatal("making the mounts private:", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		t.Fatal("mounting /proc:", err)
	}
	if self, err := os.Readlink("/proc/self"); err != nil || self != "1" || os.Getpid() != 1 {
		t.Fatalf("not the init of a namespace with its own /proc: /proc/self %q (%v), pid %d", self, err, os.Getpid())
	}
	if err := SweepPIDNamespace(); err != nil {
		t.Fatal(err)
	}
	e := bashExecutor(t)
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "sleep 3001 & sh -c 'sleep 3003 &'; sleep 3002; wait"})
	if err != nil {
		t.Fatal(err)
	}
	live, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, e, `env -i setsid sh -c 'exec sleep 1000 & exec sleep 1001 &'; setsid env -i sleep 1002 & sleep 0.2`)
	if res.LeftoversKilled != 3 {
		t.Errorf("a run that left three sleeps no tag names: leftoversKilled %d; want 3 (%q)", res.LeftoversKilled, res.Stderr.Text)
	}
	seen := run(t, e, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '").Stdout.Text
	if strings.Contains(seen, "sleep 100") {
		t.Errorf("the run's leftovers outlived it: %q", seen)
	}
	for _, s := range []string{"sleep 3001", "sleep 3002", "sleep 3003"} {
		if !strings.Contains(seen, s) {
			t.Errorf("the live job's %s did not outlive another run's end: %q", s, seen)
		}
	}
	if killed, err := live.Kill(ctx); !killed || err != nil {
		t.Errorf("killing the job: %v, %v", killed, err)
	}
}
