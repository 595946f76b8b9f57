//go:build linux

package localexec

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startedCmd is an os/exec command as a Started.
type startedCmd struct{ cmd *exec.Cmd }

func (s startedCmd) Pid() int { return s.cmd.Process.Pid }

func (s startedCmd) Wait() (syscall.WaitStatus, error) {
	err := s.cmd.Wait()
	return s.cmd.ProcessState.Sys().(syscall.WaitStatus), err
}

// A group's kill reaches every member, not only the shell that leads it:
// a member that ignores SIGTERM dies with the shell, by the group's
// SIGKILL alone, with no leftover hunt after it.
func TestGroupKillReachesEveryMember(t *testing.T) {
	cmd := exec.Command("bash", "-c", `trap "" TERM; sleep 1000 & echo $!; wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	member, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		t.Fatalf("the member's pid: %q (%v, %v)", line, err, perr)
	}
	pidfd, err := unix.PidfdOpen(member, 0)
	if err != nil {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = cmd.Wait()
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	// Whatever happens, the member goes, and is reaped if it became this
	// process's child (a subreaper's).
	defer func() {
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		_ = unix.Waitid(unix.P_PIDFD, pidfd, nil, unix.WEXITED, nil)
	}()

	g := newProcessGroup(startedCmd{cmd})
	g.kill()
	ws, _ := startedCmd{cmd}.Wait()
	if !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("the shell ended with %v, want SIGKILL", ws)
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int((5 * time.Second).Milliseconds()))
	if err != nil || n != 1 {
		t.Fatalf("the group member (pid %d, ignoring SIGTERM) still runs 5 s after the group's kill: only its leader was killed", member)
	}
}

// The tag prefix a host gives in the executor's environment is taken
// when it is 8 to 64 letters and digits, and refused otherwise (a short
// one could be a prefix of another executor's tags).
func TestValidPrefix(t *testing.T) {
	for _, c := range []struct {
		prefix string
		ok     bool
	}{
		{"", false},
		{"abc1234", false},
		{"abc12345", true},
		{strings.Repeat("Z9", 32), true},
		{strings.Repeat("Z9", 32) + "a", false},
		{"abcd-1234", false},
		{"abcd_1234", false},
		{"abcdé1234", false},
		// Every end of the three ranges is in, and the character past it
		// out.
		{"azAZ09az", true},
		{"abcd`123", false},
		{"abcd{123", false},
		{"abcd@123", false},
		{"abcd[123", false},
		{"abcd/123", false},
		{"abcd:123", false},
	} {
		if got := validPrefix(c.prefix); got != c.ok {
			t.Errorf("validPrefix(%q) = %v, want %v", c.prefix, got, c.ok)
		}
	}
}
