package localexec

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

func bashExecutor(t *testing.T) *Executor {
	t.Helper()
	e := New(Config{Name: "test", Shell: "bash", Argv: func(c string) []string { return []string{"-c", c} }})
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func run(t *testing.T, e *Executor, command string) pluginapi.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The hunt for leftovers leaves alone the children that other code in the
// same process started and waits for, and the shells of another executor.
func TestLeftoverHuntSparesOtherChildren(t *testing.T) {
	a, b := bashExecutor(t), bashExecutor(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := exec.Command("true").Run(); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range 20 {
			if res := run(t, b, "true"); res.ExitCode == nil || *res.ExitCode != 0 {
				errs <- nil
			}
		}
	})
	for range 20 {
		run(t, a, "sleep 100 & setsid sleep 100 & (setsid sleep 100 &); true")
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a child of this process that is not the executor's went wrong: %v", err)
	}
}

// A leftover whose environment cannot be told apart (it cleared it) is
// spared, and does not slow the runs after it.
func TestLeftoverWithoutEnvironmentDoesNotStall(t *testing.T) {
	e := bashExecutor(t)
	res := run(t, e, "env -i setsid sleep 30 & echo $!")
	pid, err := strconv.Atoi(strings.TrimSpace(res.Stdout.Text))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	})
	began := time.Now()
	for range 5 {
		run(t, e, "true")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("5 runs of true took %s after an untaggable leftover", took)
	}
}
