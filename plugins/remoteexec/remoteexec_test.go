package remoteexec_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// pipeTarget opens each session on an agent served in this process (a
// real bash-local, over an in-memory stream): the shared mechanics with no
// engine and no SSH server.
type pipeTarget struct {
	opened  int          // only the caller's goroutine opens
	cleaned atomic.Int32 // a session that ended is cleaned up aside
	far     net.Conn     // the agent's end of the last session's stream
}

func (p *pipeTarget) Open(ctx context.Context, target, agent []byte) (*remoteexec.Session, error) {
	host, far := net.Pipe()
	p.far = far
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = pluginapi.ServeStream(context.Background(), bashlocal.New(), far)
	}()
	p.opened++
	return &remoteexec.Session{Stream: host, Where: "a pipe", Cleanup: func(context.Context) error {
		<-served // the agent closed its executor: what it ran is gone
		p.cleaned.Add(1)
		return nil
	}}, nil
}

// split takes "where" as the target's key; the rest is the agent's.
func split(raw []byte) (target, agent []byte, err error) {
	return remoteexec.SplitSettings(raw, "where")
}

func newExecutor(t *pipeTarget) *remoteexec.Executor { return newExecutorReopening(t, true) }

func newExecutorReopening(t *pipeTarget, reopen bool) *remoteexec.Executor {
	return remoteexec.New(remoteexec.Config{
		Reopen: reopen,
		Description: pluginapi.Description{Name: "pipe", Version: "0", Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: bashlocal.SettingsSchema,
			Services: []string{pluginapi.ServiceShell}, Terminals: true, Input: true},
		Target: t,
		Split:  split,
	})
}

// The contract holds through the shared remote mechanics: the suite
// passes over an agent at the other end of a stream.
func TestConformanceThroughTheAgent(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return newExecutor(&pipeTarget{}) })
}

// A change of the agent's settings reaches the open session; a change of
// the target's ends it (its cleanup runs), and the next call opens another.
func TestConfigureKeepsOrEndsTheSession(t *testing.T) {
	pt := &pipeTarget{}
	x := newExecutor(pt)
	ctx := t.Context()
	defer x.Close(context.Background())
	run := func(req pluginapi.ExecRequest) pluginapi.RunResult {
		t.Helper()
		res, err := pluginapi.RunRequest(ctx, x, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run(pluginapi.ExecRequest{Command: "true"})
	if err := x.Configure(ctx, []byte(`{"defaultTimeoutMs": 4321}`)); err != nil {
		t.Fatal(err)
	}
	if res := run(pluginapi.ExecRequest{Command: "true"}); res.TimeoutMs != 4321 || pt.opened != 1 {
		t.Errorf("after the agent's settings changed: timeout %d (want 4321), %d sessions opened (want 1)", res.TimeoutMs, pt.opened)
	}
	if err := x.Configure(ctx, []byte(`{"where": "elsewhere", "defaultTimeoutMs": 4321}`)); err != nil {
		t.Fatal(err)
	}
	if pt.cleaned.Load() != 1 {
		t.Errorf("the target's settings changed, and the session was cleaned up %d times, want 1", pt.cleaned.Load())
	}
	if res := run(pluginapi.ExecRequest{Command: "true"}); res.TimeoutMs != 4321 || pt.opened != 2 {
		t.Errorf("after the target's settings changed: timeout %d (want 4321), %d sessions opened (want 2)", res.TimeoutMs, pt.opened)
	}
}

// A session that ended by itself (its stream broke) is replaced at the
// next call when the target reopens; otherwise the next calls fail,
// saying so, until Configure asks for a new one.
func TestAnEndedSessionIsReopenedOnlyWhereTheTargetSaysSo(t *testing.T) {
	for _, reopen := range []bool{true, false} {
		pt := &pipeTarget{}
		x := newExecutorReopening(pt, reopen)
		ctx := t.Context()
		if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil {
			t.Fatal(err)
		}
		pt.far.Close() // the connection drops
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var res pluginapi.RunResult
			res, err = pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
			if err == nil && res.Interrupted != "" && time.Now().Before(deadline) {
				continue // a call the breaking stream caught
			}
			if err == nil || !errors.Is(err, pluginapi.ErrPluginUnavailable) || strings.Contains(err.Error(), "not reopened") || time.Now().After(deadline) {
				break
			}
		}
		switch {
		case reopen && (err != nil || pt.opened != 2):
			t.Errorf("reopening: the call after the stream broke: %v, %d sessions; want a new session", err, pt.opened)
		case !reopen && (err == nil || !strings.Contains(err.Error(), "not reopened") || pt.opened != 1):
			t.Errorf("not reopening: the call after the stream broke: %v, %d sessions; want an error saying it is not reopened", err, pt.opened)
		}
		if !reopen {
			if err := x.Configure(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil || pt.opened != 2 {
				t.Errorf("after Configure, a call: %v, %d sessions; want a new session", err, pt.opened)
			}
		}
		_ = x.Close(context.Background())
	}
}

// Settings the agent refuses (a value past its bound: only the agent
// knows its bounds) fail the call that opens the session, saying so, and
// leave no session behind; the executor still closes.
func TestSettingsTheAgentRefusesFailTheCall(t *testing.T) {
	pt := &pipeTarget{}
	x := newExecutor(pt)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := x.Configure(ctx, []byte(`{"killGraceMs": 999999999}`)); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), "the agent") || ctx.Err() != nil {
		t.Errorf("a run with settings the agent refuses: %v; want ErrInvalidSettings from the agent, at once", err)
	}
	if pt.cleaned.Load() != 1 {
		t.Errorf("the refused session was cleaned up %d times, want 1", pt.cleaned.Load())
	}
	if err := x.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// A foreground command whose stream breaks under it settles with a result
// that says the session ended (no exit code: how it ended is unknown),
// holding the output that came live before; a broken stream is not an
// error of a command that did start.
func TestARunWhoseStreamBreaksSettlesInterrupted(t *testing.T) {
	for _, live := range []bool{true, false} {
		pt := &pipeTarget{}
		x := newExecutor(pt)
		ctx := t.Context()
		if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{}, 1)
		var onOutput func(pluginapi.Stream, []byte)
		if live {
			onOutput = func(pluginapi.Stream, []byte) {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}
		type outcome struct {
			res pluginapi.RunResult
			err error
		}
		ran := make(chan outcome, 1)
		go func() {
			res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo started; exec sleep 1004"}, onOutput)
			ran <- outcome{res, err}
		}()
		if live {
			<-started
		} else {
			time.Sleep(300 * time.Millisecond)
		}
		pt.far.Close() // the connection drops
		o := <-ran
		want := ""
		if live {
			want = "started\n"
		}
		if o.err != nil || o.res.ExitCode != nil || o.res.Signal != "" || o.res.Stdout.Text != want ||
			!strings.Contains(o.res.Interrupted, "the session with a pipe ended under the command") {
			t.Errorf("live %v: a run whose stream broke: %+v, %v; want it interrupted, with the output seen live (%q)", live, o.res, o.err, want)
		}
		_ = x.Close(context.Background())
	}
}

// Configuring again after the stream broke, before any call noticed,
// reconnects: Configure does not fail on the dead session, and the next
// call opens a new one.
func TestConfigureAfterABreakNoCallNoticedReconnects(t *testing.T) {
	pt := &pipeTarget{}
	x := newExecutorReopening(pt, false)
	defer x.Close(context.Background())
	ctx := t.Context()
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil {
		t.Fatal(err)
	}
	pt.far.Close()
	time.Sleep(200 * time.Millisecond) // the client sees its stream end
	if err := x.Configure(ctx, nil); err != nil {
		t.Fatalf("Configure after the stream broke: %v; want it to ask for a new session", err)
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo again"}, nil); err != nil || res.Stdout.Text != "again\n" || pt.opened != 2 {
		t.Errorf("the call after Configure: %q, %v, %d sessions; want a new session to run it", res.Stdout.Text, err, pt.opened)
	}
}

// keepingTarget is a pipeTarget that keeps what it made across sessions
// (a TargetCloser), and knows why a session was lost.
type keepingTarget struct {
	pipeTarget
	closed atomic.Int32
	// cleanedAtClose is how many sessions were cleaned up when Close came.
	cleanedAtClose atomic.Int32
	lost           atomic.Pointer[error]
}

func (k *keepingTarget) Open(ctx context.Context, target, agent []byte) (*remoteexec.Session, error) {
	s, err := k.pipeTarget.Open(ctx, target, agent)
	if err == nil {
		s.Lost = func() error {
			if p := k.lost.Load(); p != nil {
				return *p
			}
			return nil
		}
	}
	return s, err
}

func (k *keepingTarget) Close(ctx context.Context) error {
	k.cleanedAtClose.Store(k.cleaned.Load())
	k.closed.Add(1)
	return nil
}

// A target that keeps what it made across sessions is closed when its
// settings change and at the executor's Close (once, if Close comes
// twice), each time after its sessions are cleaned up, and never when a
// session ends or only the agent's settings change: a session that broke
// is reopened, and the target's Close has not run. A run the broken
// session interrupted says why the target says it was lost.
func TestATargetThatKeepsWhatItMadeIsClosedOnceAtClose(t *testing.T) {
	kt := &keepingTarget{}
	x := remoteexec.New(remoteexec.Config{
		Reopen:      true,
		Description: pluginapi.Description{Name: "pipe", Version: "0", Platform: "linux", Shell: "bash", SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: bashlocal.SettingsSchema, Services: []string{pluginapi.ServiceShell}},
		Target:      kt,
		Split:       split,
	})
	ctx := t.Context()
	started := make(chan struct{}, 1)
	ran := make(chan pluginapi.RunResult, 1)
	go func() {
		res, _ := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo started; exec sleep 1006"}, func(pluginapi.Stream, []byte) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
		ran <- res
	}()
	<-started
	why := errors.New("the pod was deleted")
	kt.lost.Store(&why)
	kt.far.Close()
	if res := <-ran; !strings.Contains(res.Interrupted, "the pod was deleted") {
		t.Errorf("the run the lost session interrupted: %q; want the target's reason", res.Interrupted)
	}
	kt.lost.Store(nil)
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil || kt.opened != 2 {
		t.Fatalf("the call after the session broke: %v, %d sessions; want a new one", err, kt.opened)
	}
	if err := x.Configure(ctx, []byte(`{"defaultTimeoutMs": 4321}`)); err != nil {
		t.Fatal(err)
	}
	if kt.closed.Load() != 0 {
		t.Errorf("the target was closed %d times before the executor's Close, its settings unchanged; want never", kt.closed.Load())
	}
	if err := x.Configure(ctx, []byte(`{"where": "elsewhere"}`)); err != nil {
		t.Fatal(err)
	}
	if kt.closed.Load() != 1 || kt.cleanedAtClose.Load() != 2 {
		t.Errorf("after the target's settings changed: the target closed %d times, with %d sessions cleaned up before; want once, after both", kt.closed.Load(), kt.cleanedAtClose.Load())
	}
	if _, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil); err != nil || kt.opened != 3 {
		t.Fatalf("the call after the target's settings changed: %v, %d sessions; want a new one", err, kt.opened)
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = x.Close(context.Background())
	if kt.closed.Load() != 2 || kt.cleanedAtClose.Load() != 3 {
		t.Errorf("after Close twice: the target closed %d times in all, with %d sessions cleaned up before the last; want twice, after all three", kt.closed.Load(), kt.cleanedAtClose.Load())
	}
}
