//go:build linux

package integration

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// agentProc is a dsh-agent this test started, and the executor at the
// other end of its stdio.
type agentProc struct {
	cmd    *exec.Cmd
	x      *pluginapi.StreamClient
	exited chan struct{} // closed once the agent has exited and been waited for
	stderr logBuffer
}

// startAgent starts dsh-agent --stdio, tagged, with more arguments if
// given, and dials it over its stdin and stdout. When the test ends it
// closes the stream, and fails if the agent did not exit within 10 s of
// that.
func startAgent(t *testing.T, tag string, args ...string) *agentProc {
	t.Helper()
	return startAgentWith(t, tag, nil, args...)
}

// startAgentWith is startAgent, with setup (if not nil) changing the
// command before it starts.
func startAgentWith(t *testing.T, tag string, setup func(*exec.Cmd), args ...string) *agentProc {
	t.Helper()
	a := &agentProc{cmd: exec.Command(bins.agent, append([]string{"--stdio"}, args...)...), exited: make(chan struct{})}
	a.cmd.Env = append(os.Environ(), tagVar+"="+tag)
	if setup != nil {
		setup(a.cmd)
	}
	// Pipes of the test's own, not the Cmd's: Wait must not close the
	// ends the stream reads while it reads them.
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stdin, a.cmd.Stdout, a.cmd.Stderr = inR, outW, &a.stderr
	err = a.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatal(err)
	}
	go func() {
		_ = a.cmd.Wait()
		close(a.exited)
	}()
	a.x, err = pluginapi.DialStream(pluginapi.Pipes(outR, inW))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.x.CloseStream()
		select {
		case <-a.exited:
		case <-time.After(10 * time.Second):
			_ = a.cmd.Process.Kill()
			<-a.exited
			t.Errorf("dsh-agent was still running 10s after its stream closed; killed. stderr:\n%s", a.stderr.String())
		}
	})
	return a
}

// The agent is bash-local, whole, across its stdio: the conformance suite
// passes over the stream, as it does over go-plugin.
func TestAgentPassesTheSuiteOverItsStdio(t *testing.T) {
	tag := scenario(t)
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
		return startAgent(t, tag).x
	}, pluginapitest.Options{Remote: true})
}

// When its stream closes (its host is gone), the agent kills everything
// it started: a foreground run in flight, a background job, and what they
// moved out of their groups (setsid); and it exits 0. The run in flight
// fails as a plugin that is gone does, at once.
func TestAgentKillsWhatItStartedWhenItsStreamCloses(t *testing.T) {
	tag := scenario(t)
	a := startAgent(t, tag)
	ctx := t.Context()
	spec, err := a.x.Resolve(ctx, pluginapi.ExecRequest{Command: "setsid sleep 1001 & sleep 1002"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.x.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() {
		_, err := pluginapi.RunRequest(context.Background(), a.x, pluginapi.ExecRequest{Command: "setsid sleep 1003 & sleep 1004"}, nil)
		ran <- err
	}()
	waitForSleeps(t, tag, "1001", "1002", "1003", "1004")

	a.x.CloseStream()
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("dsh-agent still ran 10s after its stream closed; stderr:\n%s", a.stderr.String())
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("dsh-agent exited %d once its stream closed, want 0; stderr:\n%s", code, a.stderr.String())
	}
	select {
	case err := <-ran:
		if !errors.Is(err, pluginapi.ErrPluginUnavailable) {
			t.Errorf("the run in flight when the stream closed ended with %v, want ErrPluginUnavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the run in flight when the stream closed was still waiting 10s later")
	}
	// assertGone (the scenario's cleanup) fails on any sleep left.
	if left := survivors(tag); len(left) > 0 {
		t.Errorf("processes %v outlived the agent's stream", left)
	}
}

// SIGTERM (a container stopped, a session's hangup) is a clean end: the
// agent kills what it started, and exits 0 without calling it an error.
func TestAgentEndsCleanlyOnSIGTERM(t *testing.T) {
	tag := scenario(t)
	a := startAgent(t, tag)
	spec, err := a.x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "setsid sleep 1005 & sleep 1006"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.x.Start(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	waitForSleeps(t, tag, "1005", "1006")
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("dsh-agent still ran 10s after SIGTERM")
	}
	if code := a.cmd.ProcessState.ExitCode(); code != 0 || a.stderr.String() != "" {
		t.Errorf("dsh-agent on SIGTERM: exit %d, stderr %q; want 0 and nothing said", code, a.stderr.String())
	}
	if left := survivors(tag); len(left) > 0 {
		t.Errorf("processes %v outlived the agent's SIGTERM", left)
	}
}

// waitForSleeps waits until a sleep of every given length runs, tagged.
func waitForSleeps(t *testing.T, tag string, lengths ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		seen := map[string]bool{}
		for _, pid := range ours(tag) {
			if argv := argvOf(pid); len(argv) == 2 && argv[0] == "sleep" {
				seen[argv[1]] = true
			}
		}
		missing := 0
		for _, l := range lengths {
			if !seen[l] {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent's commands did not start within 30s: saw sleeps %v, want %v", seen, lengths)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Run by hand, the agent explains itself: without --stdio it prints its
// usage (exit 2), and on a terminal it says it is not for one (exit 1),
// rather than wait for gRPC from a user's keyboard.
func TestAgentRunByHandExplainsItself(t *testing.T) {
	out, err := exec.Command(bins.agent).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "usage: dsh-agent --stdio") {
		t.Errorf("dsh-agent without --stdio: exit %d, output %q; want 2 and its usage", code, out)
	}
	out, err = exec.Command(bins.agent, "-h").CombinedOutput()
	if code := exitCode(err); code != 0 || !strings.Contains(string(out), "usage: dsh-agent --stdio") {
		t.Errorf("dsh-agent -h: exit %d, output %q; want 0 and its usage", code, out)
	}

	tty := openTerminal(t)
	cmd := exec.Command(bins.agent, "--stdio")
	cmd.Stdin, cmd.Stdout = tty, tty
	var stderr logBuffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCode(err); code != 1 || !strings.Contains(stderr.String(), "stdin is a terminal") {
			t.Errorf("dsh-agent --stdio on a terminal: exit %d, stderr %q; want 1 and why", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Error("dsh-agent --stdio on a terminal waited instead of refusing it")
	}
}

// exitCode is a finished command's exit status (0 for a nil error).
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// openTerminal opens a pseudo-terminal's slave, as a user's shell has.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal("/dev/ptmx:", err)
	}
	master := os.NewFile(uintptr(mfd), "ptmx")
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal("unlockpt:", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal("ptsname:", err)
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal("the pty's slave:", err)
	}
	t.Cleanup(func() { slave.Close() })
	return slave
}

// Outside a container (its parent is this test, not an init), the agent
// refuses --sweep-pids and ends before it serves: the PID namespace it
// would sweep is this machine's.
func TestAgentRefusesToSweepAPIDNamespaceItDoesNotOwn(t *testing.T) {
	cmd := exec.Command(bins.agent, "--stdio", "--sweep-pids")
	cmd.Stdin = strings.NewReader("") // not a terminal; never read
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "--sweep-pids") || !strings.Contains(string(out), "init's child") {
		t.Errorf("dsh-agent --sweep-pids outside a container: exit %d, output %q; want 1 and why", code, out)
	}
}
