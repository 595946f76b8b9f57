package host_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
)

// olderExecutor is bash-local as a plugin built before terminals and
// input were in the contract: its Describe says neither, and its Resolve
// drops what it does not know (its wire messages had no such fields), so
// its Start would run the command without them. It counts its Starts.
type olderExecutor struct {
	pluginapi.ShellExecutor
	starts atomic.Int32
}

func (x *olderExecutor) Describe(ctx context.Context) (pluginapi.Description, error) {
	d, err := x.ShellExecutor.Describe(ctx)
	d.Name, d.Terminals, d.Input = "older", false, false
	return d, err
}

func (x *olderExecutor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	req.Terminal, req.OpenStdin = nil, false
	return x.ShellExecutor.Resolve(ctx, req)
}

func (x *olderExecutor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	x.starts.Add(1)
	return x.ShellExecutor.Start(ctx, spec)
}

// The host refuses a terminal, or an open stdin, to an executor whose
// Describe does not offer them, before anything starts and with an error
// that names the executor and why: one built before terminals would
// otherwise run the command without.
func TestJobsRefuseATerminalToAnExecutorThatDoesNotOfferIt(t *testing.T) {
	x := &olderExecutor{ShellExecutor: bashlocal.New()}
	shell := pluginapitest.Serve(t, x)
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return shell, 1, func() {} }, 0)
	t.Cleanup(func() { _ = jobs.Close(context.Background()) })
	ctx := context.Background()
	for _, tc := range []struct {
		req  pluginapi.ExecRequest
		want string
	}{
		{pluginapi.ExecRequest{Command: "bash", Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}},
			`executor "older" does not support terminals (built before shellexec terminals, or does not offer them)`},
		{pluginapi.ExecRequest{Command: "cat", OpenStdin: true},
			`executor "older" does not support input to a running command`},
	} {
		_, err := jobs.Start(ctx, "alice", tc.req)
		if !errors.Is(err, pluginapi.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) on an executor that does not offer it: %v; want ErrUnsupported saying %q", tc.req, err, tc.want)
		}
	}
	if n := x.starts.Load(); n != 0 {
		t.Errorf("the executor started %d commands it could not give what they asked for", n)
	}
	if list := jobs.List("alice"); len(list) != 0 {
		t.Errorf("refused requests left jobs: %+v", list)
	}
}

// A terminal job over the real bash-local plugin: the owner answers its
// prompt through Input, its reads say when it waits, Resize reaches it,
// and once it has finished Input fails with ErrInputClosed.
func TestJobInputReachesATerminalJob(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	inputReachesATerminalJob(t, jobs)
}

// So it does over the real bash-sandbox plugin, whose Describe offers
// terminals: the job's terminal is in a devpts instance of its run's own.
func TestJobInputReachesATerminalJobInTheSandbox(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-sandbox", Path: sandboxBin})
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return h.Shell(), 1, func() {} }, 0)
	t.Cleanup(func() { _ = jobs.Close(context.Background()) })
	inputReachesATerminalJob(t, jobs)
}

func inputReachesATerminalJob(t *testing.T, jobs *host.Jobs) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{
		Command:  `printf 'name? '; read -r n; echo "size $(stty size) hello $n"`,
		Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80},
	})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	waiting := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !waiting; time.Sleep(20 * time.Millisecond) {
		r, _, err := jobs.Output(ctx, "alice", info.ID)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(r.Delta)
		waiting = r.WaitingForInput
	}
	if !waiting {
		t.Fatalf("the job blocked at its prompt was never said to wait for input; output %q", got.String())
	}
	if err := jobs.Input(ctx, "bob", info.ID, []byte("x\n"), false); !errors.Is(err, host.ErrUnknownJob) {
		t.Errorf("another owner wrote to the job: %v", err)
	}
	if err := jobs.Resize(ctx, "alice", info.ID, 40, 120); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Input(ctx, "alice", info.ID, []byte("world\n"), false); err != nil {
		t.Fatal(err)
	}
	done, err := jobs.Wait(ctx, "alice", info.ID)
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, _, err := jobs.Output(ctx, "alice", info.ID)
		if err != nil || r.Delta == "" {
			break
		}
		got.WriteString(r.Delta)
	}
	if !strings.Contains(got.String(), "size 40 120 hello world") {
		t.Errorf("the job's output %q; want its answer on a resized terminal", got.String())
	}
	if done.State != host.JobExited || done.Exit.ExitCode == nil || *done.Exit.ExitCode != 0 {
		t.Errorf("finished job %+v", done)
	}
	if err := jobs.Input(ctx, "alice", info.ID, []byte("late\n"), false); !errors.Is(err, pluginapi.ErrInputClosed) {
		t.Errorf("Input to a finished job: %v; want ErrInputClosed", err)
	}
}
