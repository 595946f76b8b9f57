package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// partitionSpy records the partition of every request and spec it passes
// on to a real plugin.
type partitionSpy struct {
	pluginapi.ShellExecutor
	mu   sync.Mutex
	seen []string
}

func (s *partitionSpy) note(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, p)
}

func (s *partitionSpy) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	s.note("run " + req.Partition)
	return pluginapi.RunRequest(ctx, s.ShellExecutor, req, onOutput)
}

func (s *partitionSpy) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	s.note("start " + spec.Partition)
	return s.ShellExecutor.Start(ctx, spec)
}

// The bash tool runs an owner's commands, foreground and background, in
// the owner's partition: the spec a job starts from carries it back from
// the plugin's Resolve. A job started without one runs in its owner's.
func TestBashToolRunsInTheOwnersPartition(t *testing.T) {
	r := runtimeOn(t, pluginBin, 0)
	spy := &partitionSpy{ShellExecutor: r.Shell()}
	jobs := host.NewJobs(func() (pluginapi.ShellExecutor, int, func()) { return spy, 1, func() {} }, 0)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = jobs.Close(ctx)
	})
	tool, err := host.NewBashTool(t.Context(), spy, jobs, host.ApprovalPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Call(t.Context(), "alice", host.BashInput{Command: "true"}, host.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Call(t.Context(), "bob", host.BashInput{Command: "true", RunInBackground: true}, host.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Start(t.Context(), "carol", pluginapi.ExecRequest{Command: "true"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"run alice", "start bob", "start carol"}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.seen) != len(want) {
		t.Fatalf("partitions seen %q, want %q", spy.seen, want)
	}
	for i := range want {
		if spy.seen[i] != want[i] {
			t.Errorf("partitions seen %q, want %q", spy.seen, want)
		}
	}
	// An executor that does not partition has nothing to end.
	if err := pluginapi.ClosePartition(t.Context(), r.Shell(), "alice"); err != nil {
		t.Errorf("ClosePartition through the runtime: %v", err)
	}
	if _, ok := r.Shell().(pluginapi.PartitionCloser); !ok {
		t.Errorf("the runtime's shell (%T) does not pass ClosePartition on", r.Shell())
	}
}
