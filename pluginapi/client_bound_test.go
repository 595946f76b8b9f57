package pluginapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// stuckExecutor is a plugin's executor whose Run answers at once, or, when
// stuck, never settles until the test lets it go, whatever the host asks:
// a wedged plugin, as the client's bound must survive.
type stuckExecutor struct {
	pluginapi.ShellExecutor // nothing else is called
	stuck                   bool
	release                 chan struct{}
}

func (x *stuckExecutor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	if x.stuck {
		<-x.release
	}
	zero := 0
	return pluginapi.RunResult{ExitCode: &zero}, nil
}

func (x *stuckExecutor) Close(context.Context) error { return nil }

// serveStuck serves a stuckExecutor over real gRPC; the stuck Run is let go
// before the server stops.
func serveStuck(t *testing.T, stuck bool) pluginapi.ShellExecutor {
	x := &stuckExecutor{stuck: stuck, release: make(chan struct{})}
	client := pluginapitest.Serve(t, x) // its cleanup runs after ours below
	t.Cleanup(func() { close(x.release) })
	return client
}

// The client bounds a run by its timeout, its kill grace and a margin: a
// plugin that never settles cannot hold the caller, and says which bound
// ran out, the run's or the abort's.
func TestARunThatNeverSettlesIsBounded(t *testing.T) {
	spec := pluginapi.ExecSpec{Command: "true", Workdir: "/", TimeoutMs: 100, KillGraceMs: 100, StdoutMaxBytes: 10, StderrMaxBytes: 10}
	for _, tc := range []struct {
		name, want string
		abort      bool
	}{
		{"the run's bound", "the command did not settle within 5.2s", false},
		{"the abort's bound", "the command did not settle within 5.1s of the abort", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := serveStuck(t, true)
			ctx := context.Background()
			if tc.abort {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
			}
			began := time.Now()
			_, err := x.Run(ctx, spec)
			took := time.Since(began)
			if !errors.Is(err, pluginapi.ErrPluginUnavailable) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("a run the plugin never settles: %v after %s; want ErrPluginUnavailable saying %q", err, took, tc.want)
			}
			if took > 30*time.Second {
				t.Errorf("the bound held the caller %s", took)
			}
		})
	}
}

// A kill grace longer than the timeout widens the client's bound, never
// shrinks it below zero: the run settles as the plugin answers.
func TestAKillGraceLongerThanTheTimeoutKeepsTheRun(t *testing.T) {
	x := serveStuck(t, false)
	spec := pluginapi.ExecSpec{Command: "true", Workdir: "/", TimeoutMs: 1000, KillGraceMs: 7000, StdoutMaxBytes: 10, StderrMaxBytes: 10}
	res, err := x.Run(t.Context(), spec)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("a run with a 7 s kill grace and a 1 s timeout: %+v, %v; want it settled with exit 0", res, err)
	}
}

// failingClose is an executor whose first Close fails: it could not
// terminate what it runs.
type failingClose struct {
	pluginapi.ShellExecutor // nothing else is called
	closes                  int
}

func (x *failingClose) Close(context.Context) error {
	if x.closes++; x.closes == 1 {
		return errors.New("could not terminate process 4242")
	}
	return nil
}

// An executor's Close that fails reaches the host as an error, its reason
// with it: a host must not take for closed what still runs.
func TestAFailedCloseReachesTheHost(t *testing.T) {
	x := pluginapitest.Serve(t, &failingClose{})
	if err := x.Close(t.Context()); err == nil || !strings.Contains(err.Error(), "could not terminate process 4242") {
		t.Errorf("Close over the wire of an executor whose Close failed: %v, want its error", err)
	}
}

// earlyExecutor is a plugin's executor whose Run fails a moment before the
// deadline its context carries (the host's bound, as gRPC hands it on):
// the plugin's copy of the bound running out first.
type earlyExecutor struct {
	pluginapi.ShellExecutor // nothing else is called
}

func (earlyExecutor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	dl, ok := ctx.Deadline()
	if !ok {
		return pluginapi.RunResult{}, errors.New("no deadline reached the plugin")
	}
	select {
	case <-time.After(time.Until(dl) - 200*time.Millisecond):
	case <-ctx.Done():
	}
	return pluginapi.RunResult{}, errors.New("the plugin's copy of the deadline ran out")
}

func (earlyExecutor) Close(context.Context) error { return nil }

// A run whose stream ends a moment before the client's bound (the plugin's
// copy of the deadline ran out first) is reported as the bound's doing,
// as a plugin that never settles is: not as the plugin's error.
func TestARunEndedJustBeforeTheBoundReportsTheBound(t *testing.T) {
	t.Parallel()
	x := pluginapitest.Serve(t, earlyExecutor{})
	spec := pluginapi.ExecSpec{Command: "true", Workdir: "/", TimeoutMs: 100, KillGraceMs: 100, StdoutMaxBytes: 10, StderrMaxBytes: 10}
	_, err := x.Run(t.Context(), spec)
	if want := "the command did not settle within 5.2s"; !errors.Is(err, pluginapi.ErrPluginUnavailable) || !strings.Contains(err.Error(), want) {
		t.Errorf("a run whose plugin gave up 200 ms before the bound: %v; want ErrPluginUnavailable saying %q", err, want)
	}
}
