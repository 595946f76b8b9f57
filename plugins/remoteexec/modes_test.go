package remoteexec_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// modeTarget is a pipeTarget of one mode and partition, whose facts name
// its mode.
type modeTarget struct {
	pipeTarget
	mode      pluginapi.SandboxMode
	partition string
	opened    atomic.Bool
	broken    atomic.Bool
}

func (m *modeTarget) Open(ctx context.Context, target, agent []byte) (*remoteexec.Session, error) {
	m.opened.Store(true)
	return m.pipeTarget.Open(ctx, target, agent)
}

func (m *modeTarget) Facts() *pluginapi.SandboxFacts {
	if m.mode == pluginapi.SandboxNone || !m.opened.Load() {
		return nil
	}
	return &pluginapi.SandboxFacts{Mode: m.mode, Enforced: []string{"shape of " + string(m.mode)}}
}
func (m *modeTarget) Offline() bool { return false }
func (m *modeTarget) Intact() bool  { return !m.broken.Load() }

// modesFixture is a Modes over modeTargets: the settings' "where" "none"
// means no modes; per partition, at most two partitions.
type modesFixture struct {
	mu      sync.Mutex
	targets []*modeTarget
}

func (f *modesFixture) modes(perPartition bool) *remoteexec.Modes {
	var partitions func([]byte) (bool, int, string)
	if perPartition {
		partitions = func([]byte) (bool, int, string) { return true, 2, "test.max" }
	}
	return remoteexec.NewModes(remoteexec.ModesConfig{
		Description: pluginapi.Description{Name: "modes", Version: "0", Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: bashlocal.SettingsSchema,
			Services: []string{pluginapi.ServiceShell}, Terminals: true, Input: true},
		Split: split,
		Modes: func(target []byte) ([]pluginapi.SandboxMode, pluginapi.SandboxMode) {
			if string(target) == `{"where":"none"}` {
				return nil, pluginapi.SandboxNone
			}
			return []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite}, pluginapi.SandboxWorkspaceWrite
		},
		NewTarget: func(mode pluginapi.SandboxMode, partition string) remoteexec.ModeTarget {
			t := &modeTarget{mode: mode, partition: partition}
			f.mu.Lock()
			f.targets = append(f.targets, t)
			f.mu.Unlock()
			return t
		},
		Partitions: partitions,
		Executor:   "the test executor", Unit: "box", IDPrefix: "t",
	})
}

func (f *modesFixture) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.targets {
		if t.opened.Load() {
			n++
		}
	}
	return n
}

// Each mode a command asks for has a session of its own, opened at its
// first command; a command that asks for none runs in the default mode's;
// each result has its session's facts; a mode not offered is refused;
// background processes of two sessions have distinct ids.
func TestModesGiveEachModeASession(t *testing.T) {
	ctx := t.Context()
	f := &modesFixture{}
	x := f.modes(false)
	defer x.Close(context.Background())
	if d, _ := x.Describe(ctx); d.SandboxMode != pluginapi.SandboxWorkspaceWrite {
		t.Errorf("Describe: mode %q; want the default", d.SandboxMode)
	}
	for _, tt := range []struct {
		asked, want pluginapi.SandboxMode
		opened      int
	}{
		{pluginapi.SandboxNone, pluginapi.SandboxWorkspaceWrite, 1},
		{pluginapi.SandboxReadOnly, pluginapi.SandboxReadOnly, 2},
		{pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxWorkspaceWrite, 2},
	} {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo hi", SandboxMode: tt.asked}, nil)
		if err != nil || res.Stdout.Text != "hi\n" || res.Sandbox == nil || res.Sandbox.Mode != tt.want {
			t.Fatalf("a command asking for %q: %+v, %v; want it run in %s, with its facts", tt.asked, res, err, tt.want)
		}
		if n := f.opened(); n != tt.opened {
			t.Errorf("after a command asking for %q: %d sessions; want %d", tt.asked, n, tt.opened)
		}
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", SandboxMode: pluginapi.SandboxDangerFullAccess}, nil); !errors.Is(err, pluginapi.ErrInvalidRequest) {
		t.Errorf("a mode not offered: %v; want it refused", err)
	}
	var ids []string
	for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite} {
		spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "sleep 30", SandboxMode: mode})
		if err != nil || spec.SandboxMode != mode {
			t.Fatalf("Resolve in %s: %+v, %v", mode, spec, err)
		}
		p, err := x.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Kill(context.Background())
		ids = append(ids, p.ID())
	}
	// Each session's agent numbers its processes from the same start (here
	// both agents share a process, so their own ids differ anyway): the
	// ids are the executor's, numbered across its sessions.
	if !strings.HasPrefix(ids[0], "t1-") || !strings.HasPrefix(ids[1], "t2-") {
		t.Errorf("background processes of two sessions: ids %q; want the executor's numbering, t1-…, t2-…", ids)
	}
}

// With no modes (the settings do not sandbox), every call goes to one
// session, its results have no facts, and a mode asked for is refused.
func TestModesWithoutModesHaveOneSession(t *testing.T) {
	ctx := t.Context()
	f := &modesFixture{}
	x := f.modes(false)
	defer x.Close(context.Background())
	if err := x.Configure(ctx, []byte(`{"where": "none"}`)); err != nil {
		t.Fatal(err)
	}
	if d, _ := x.Describe(ctx); d.SandboxMode != pluginapi.SandboxNone {
		t.Errorf("Describe: mode %q; want none", d.SandboxMode)
	}
	for range 2 {
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo hi"}, nil)
		if err != nil || res.Stdout.Text != "hi\n" || res.Sandbox != nil {
			t.Fatalf("a command: %+v, %v; want it run, without facts", res, err)
		}
	}
	if n := f.opened(); n != 1 {
		t.Errorf("sessions: %d; want one", n)
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", SandboxMode: pluginapi.SandboxReadOnly}, nil); !errors.Is(err, pluginapi.ErrInvalidRequest) {
		t.Errorf("a mode asked of settings without modes: %v; want it refused", err)
	}
}

// Per partition, each partition's requests get sessions of their own, up
// to the bound (a request past it is refused, naming the setting), and
// ClosePartition ends a partition's sessions; a session that lost its
// shape is replaced at the next call.
func TestModesPerPartition(t *testing.T) {
	ctx := t.Context()
	f := &modesFixture{}
	x := f.modes(true)
	defer x.Close(context.Background())
	for _, p := range []string{"a", "b"} {
		if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Partition: p}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.opened(); n != 2 {
		t.Errorf("sessions of two partitions: %d; want two", n)
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Partition: "c"}, nil)
	if !errors.Is(err, pluginapi.ErrInvalidRequest) || !contains(err, "test.max") {
		t.Errorf("a third partition past the bound: %v; want it refused, naming the setting", err)
	}
	if err := x.ClosePartition(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if f.targets[0].cleaned.Load() != 1 || f.targets[1].cleaned.Load() != 0 {
		t.Errorf("after ClosePartition(a): cleaned %d and %d; want a's alone", f.targets[0].cleaned.Load(), f.targets[1].cleaned.Load())
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Partition: "c"}, nil); err != nil {
		t.Errorf("a partition once another closed: %v", err)
	}
	f.targets[1].broken.Store(true)
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true", Partition: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := len(f.targets); n != 4 || !f.targets[3].opened.Load() || f.targets[3].partition != "b" {
		t.Errorf("after b's session lost its shape: %d targets; want a new one for b", n)
	}
}

// A background process of a mode's session keeps what the agent gives it:
// its terminal takes input and a new size, a read says when it waits for
// input, and a process without open input says so; the executor's ids do
// not hide any of it.
func TestModesCarryTerminalsAndInput(t *testing.T) {
	ctx := t.Context()
	f := &modesFixture{}
	x := f.modes(true)
	defer x.Close(context.Background())
	start := func(req pluginapi.ExecRequest) pluginapi.ShellProcess {
		t.Helper()
		spec, err := x.Resolve(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		p, err := x.Start(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = p.Kill(context.Background())
			_, _ = p.Wait(context.Background())
		})
		return p
	}
	readUntil := func(p pluginapi.ShellProcess, want string) (waited bool) {
		t.Helper()
		var all strings.Builder
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			r, err := p.ReadOutput(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all.WriteString(r.Delta)
			waited = waited || r.WaitingForInput
			if strings.Contains(all.String(), want) && (waited || !strings.HasSuffix(want, "? ")) {
				return waited
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no %q within 10 s (waiting for input: %v); got %q", want, waited, all.String())
		return false
	}
	p := start(pluginapi.ExecRequest{Partition: "a", Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80},
		Command: `stty size; printf 'name? '; IFS= read -r n; echo "got $(stty size) $n"`})
	if !strings.HasPrefix(p.ID(), "t1-") {
		t.Errorf("id %q; want the executor's", p.ID())
	}
	if !readUntil(p, "name? ") {
		t.Errorf("a terminal job blocked reading its terminal: no read said it waits for input")
	}
	if err := pluginapi.Resize(ctx, p, 30, 100); err != nil {
		t.Fatalf("Resize through the executor: %v", err)
	}
	if err := pluginapi.WriteInput(ctx, p, []byte("tty\n"), false); err != nil {
		t.Fatalf("WriteInput through the executor: %v", err)
	}
	readUntil(p, "got 30 100 tty")
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pluginapi.WriteInput(ctx, p, []byte("late\n"), false); !errors.Is(err, pluginapi.ErrInputClosed) {
		t.Errorf("input to a finished process: %v; want ErrInputClosed", err)
	}
	piped := start(pluginapi.ExecRequest{Partition: "b", OpenStdin: true, Command: "cat"})
	if err := pluginapi.WriteInput(ctx, piped, []byte("one\n"), false); err != nil {
		t.Fatal(err)
	}
	readUntil(piped, "one\n")
	if err := pluginapi.Resize(ctx, piped, 10, 10); !errors.Is(err, pluginapi.ErrUnsupported) {
		t.Errorf("Resize of a process without a terminal: %v; want ErrUnsupported", err)
	}
	if err := pluginapi.WriteInput(ctx, piped, nil, true); err != nil {
		t.Fatal(err)
	}
	if exit, err := piped.Wait(ctx); err != nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
		t.Errorf("cat once its stdin closed: %+v, %v; want exit 0", exit, err)
	}
	plain := start(pluginapi.ExecRequest{Partition: "b", Command: "sleep 30"})
	if err := pluginapi.WriteInput(ctx, plain, []byte("x"), false); !errors.Is(err, pluginapi.ErrUnsupported) {
		t.Errorf("input to a process started without open input: %v; want ErrUnsupported", err)
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
