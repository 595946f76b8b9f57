package pluginapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// echoExecutor answers a run with the command as its output, or, for
// "hold", only once the test lets it go; it counts its Closes.
type echoExecutor struct {
	pluginapi.ShellExecutor // nothing else is called
	closes                  atomic.Int32
	holding                 chan struct{}
	release                 chan struct{}
}

func newEchoExecutor() *echoExecutor {
	return &echoExecutor{holding: make(chan struct{}, 1), release: make(chan struct{})}
}

func (x *echoExecutor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	return pluginapi.ExecSpec{Command: req.Command, TimeoutMs: 60_000, KillGraceMs: 1000}, nil
}

func (x *echoExecutor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	if spec.Command == "hold" {
		x.holding <- struct{}{}
		select {
		case <-x.release:
		case <-ctx.Done():
		}
	}
	zero := 0
	text := spec.Command
	if spec.Command == "big" {
		text = strings.Repeat("x", 3<<20)
	}
	return pluginapi.RunResult{ExitCode: &zero, Stdout: pluginapi.CollectedOutput{Text: text, TotalBytes: int64(len(text))}}, nil
}

func (x *echoExecutor) Close(context.Context) error {
	x.closes.Add(1)
	return nil
}

// serveOverPipe serves x at one end of an in-memory stream and dials it
// from the other; served says how ServeStream ended.
func serveOverPipe(t testing.TB, x pluginapi.ShellExecutor) (client *pluginapi.StreamClient, agentEnd net.Conn, served *serveResult) {
	t.Helper()
	// Registered first, checked last: once the stream and both ends are
	// gone, nothing of theirs may still run.
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	hostEnd, agent := net.Pipe()
	res := &serveResult{done: make(chan struct{})}
	go func() {
		res.err = pluginapi.ServeStream(context.Background(), x, agent)
		close(res.done)
	}()
	c, err := pluginapi.DialStream(hostEnd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.CloseStream()
		select {
		case <-res.done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStream did not return within 10s of its stream closing")
		}
	})
	return c, agent, res
}

// serveResult is how ServeStream ended, once done is closed.
type serveResult struct {
	err  error
	done chan struct{}
}

func run(ctx context.Context, x pluginapi.ShellExecutor, command string) (pluginapi.RunResult, error) {
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: command})
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	return x.Run(ctx, spec)
}

// The contract crosses one byte stream: the executor's answers, large
// ones too (a capped result is about 3 MiB on the wire).
func TestTheContractCrossesOneStream(t *testing.T) {
	c, _, _ := serveOverPipe(t, newEchoExecutor())
	for _, cmd := range []string{"hello", "big"} {
		res, err := run(t.Context(), c, cmd)
		if err != nil {
			t.Fatalf("run %q over the stream: %v", cmd, err)
		}
		if want := map[string]int{"hello": 5, "big": 3 << 20}[cmd]; len(res.Stdout.Text) != want {
			t.Errorf("run %q over the stream: %d bytes of stdout, want %d", cmd, len(res.Stdout.Text), want)
		}
	}
}

// When its stream closes, the agent's side closes its executor (whoever
// started the commands is gone) and ServeStream returns ErrStreamClosed.
func TestAClosedStreamClosesTheExecutor(t *testing.T) {
	x := newEchoExecutor()
	c, _, served := serveOverPipe(t, x)
	if _, err := run(t.Context(), c, "hello"); err != nil {
		t.Fatal(err)
	}
	c.CloseStream()
	select {
	case <-served.done:
		if !errors.Is(served.err, pluginapi.ErrStreamClosed) {
			t.Errorf("ServeStream returned %v once its stream closed, want ErrStreamClosed", served.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStream still served 10s after its stream closed")
	}
	if n := x.closes.Load(); n != 1 {
		t.Errorf("the executor was closed %d times once its stream closed, want 1", n)
	}
}

// When the stream breaks under a call, the call fails as a plugin that is
// gone does, at once, and Done says the stream ended; the client never
// hangs on a dead stream, and later calls fail too.
func TestABrokenStreamFailsCallsInFlight(t *testing.T) {
	x := newEchoExecutor()
	c, agentEnd, _ := serveOverPipe(t, x)
	defer close(x.release)
	errc := make(chan error, 1)
	go func() {
		_, err := run(context.Background(), c, "hold")
		errc <- err
	}()
	<-x.holding
	agentEnd.Close() // the agent's end of the stream is gone
	select {
	case err := <-errc:
		if !errors.Is(err, pluginapi.ErrPluginUnavailable) {
			t.Errorf("a run whose stream broke failed with %v, want ErrPluginUnavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a run whose stream broke was still waiting 10s later")
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Error("Done was not closed once the stream broke")
	}
	if _, err := run(t.Context(), c, "hello"); !errors.Is(err, pluginapi.ErrPluginUnavailable) {
		t.Errorf("a run after the stream broke: %v, want ErrPluginUnavailable", err)
	}
}

// countingCloser counts the Closes of a stream.
type countingCloser struct {
	net.Conn
	closes atomic.Int32
}

func (c *countingCloser) Close() error {
	c.closes.Add(1)
	return c.Conn.Close()
}

// A stream is closed once, though both gRPC's transport (the other end
// went away) and its owner (CloseStream) close it: some streams' Close
// may not be called twice, or at once (an SSH session's stdin).
func TestAStreamIsClosedOnce(t *testing.T) {
	before := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, before)
	hostEnd, agent := net.Pipe()
	counted := &countingCloser{Conn: hostEnd}
	x := newEchoExecutor()
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = pluginapi.ServeStream(context.Background(), x, agent)
	}()
	c, err := pluginapi.DialStream(counted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(t.Context(), c, "hello"); err != nil {
		t.Fatal(err)
	}
	agent.Close() // the other end goes: the transport closes its side
	<-c.Done()
	<-served
	time.Sleep(50 * time.Millisecond) // the transport's own close
	c.CloseStream()
	c.CloseStream()
	if n := counted.closes.Load(); n != 1 {
		t.Errorf("the stream was closed %d times, want once", n)
	}
}

// closeFails is an echoExecutor whose Close fails: it could not terminate
// what it ran.
type closeFails struct{ *echoExecutor }

func (x closeFails) Close(ctx context.Context) error {
	_ = x.echoExecutor.Close(ctx)
	return errors.New("could not terminate process 4242")
}

// When the executor's Close fails once the stream is gone, ServeStream
// says so with why it stopped: an agent must not exit as if all went well.
func TestAFailedCloseOnTheAgentsSideIsReturned(t *testing.T) {
	c, _, served := serveOverPipe(t, closeFails{newEchoExecutor()})
	if _, err := run(t.Context(), c, "hello"); err != nil {
		t.Fatal(err)
	}
	c.CloseStream()
	select {
	case <-served.done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStream still served 10s after its stream closed")
	}
	if !errors.Is(served.err, pluginapi.ErrStreamClosed) || !strings.Contains(fmt.Sprint(served.err), "could not terminate process 4242") {
		t.Errorf("ServeStream returned %v, want ErrStreamClosed with the Close's error", served.err)
	}
}

// A side stream carries calls beside the lifeline: its end stops only its
// own serving, never the executor, which the lifeline's end still closes.
func TestASideStreamsEndLeavesTheExecutorOpen(t *testing.T) {
	x := newEchoExecutor()
	lifeline, _, served := serveOverPipe(t, x)
	hostEnd, agentEnd := net.Pipe()
	side := make(chan error, 1)
	go func() { side <- pluginapi.ServeSideStream(context.Background(), x, agentEnd) }()
	c, err := pluginapi.DialStream(hostEnd)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := run(t.Context(), c, "over the side"); err != nil || res.Stdout.Text != "over the side" {
		t.Fatalf("a run over the side stream: %q, %v", res.Stdout.Text, err)
	}
	c.CloseStream()
	select {
	case err := <-side:
		if !errors.Is(err, pluginapi.ErrStreamClosed) {
			t.Errorf("ServeSideStream returned %v once its stream closed, want ErrStreamClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeSideStream still served 10s after its stream closed")
	}
	if n := x.closes.Load(); n != 0 {
		t.Errorf("the executor was closed %d times when its side stream ended, want 0", n)
	}
	if _, err := run(t.Context(), lifeline, "still served"); err != nil {
		t.Errorf("the lifeline, after the side stream ended: %v", err)
	}
	lifeline.CloseStream()
	<-served.done
	if n := x.closes.Load(); n != 1 {
		t.Errorf("the executor was closed %d times once its lifeline ended, want 1", n)
	}
}

// A stream whose other side never speaks (an agent whose host died as it
// dialled, say) is served until ctx ends, and then no longer: gRPC's
// server, stopping, waited for a handshake only the stream's end could
// end, and the agent never returned.
func TestAStreamNobodySpeaksOnStopsWithItsContext(t *testing.T) {
	for _, side := range []bool{false, true} {
		t.Run(map[bool]string{false: "lifeline", true: "side stream"}[side], func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			defer goleak.VerifyNone(t, before)
			hostEnd, pipeEnd := net.Pipe()
			defer hostEnd.Close() // the host's side says nothing
			agentEnd := &firstUse{Conn: pipeEnd, used: make(chan struct{})}
			ctx, cancel := context.WithCancel(t.Context())
			served := make(chan error, 1)
			go func() {
				if side {
					served <- pluginapi.ServeSideStream(ctx, newEchoExecutor(), agentEnd)
				} else {
					served <- pluginapi.ServeStream(ctx, newEchoExecutor(), agentEnd)
				}
			}()
			<-agentEnd.used // the server is in its handshake, which nobody answers
			cancel()
			select {
			case err := <-served:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("serving ended with %v once its context ended, want context.Canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serving a stream nobody spoke on went on 10 s after its context ended")
			}
		})
	}
}

// firstUse is a stream's end that says when it is first read or written
// (gRPC's server, in its handshake, writes its settings, then reads).
type firstUse struct {
	net.Conn
	once sync.Once
	used chan struct{}
}

func (c *firstUse) Read(p []byte) (int, error) {
	c.once.Do(func() { close(c.used) })
	return c.Conn.Read(p)
}

func (c *firstUse) Write(p []byte) (int, error) {
	c.once.Do(func() { close(c.used) })
	return c.Conn.Write(p)
}
