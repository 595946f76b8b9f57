package integration

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// SIGINT or SIGTERM to dsh-host aborts the command: its process group is
// killed, the result settles, and dsh-host exits as the command did.
func TestSignalAbortsRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			tag := scenario(t)
			p := command(t, tag, "run", "--", "sleep 1000").start(t)
			waitForCommand(t, tag, "sleep")
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			assertAborted(t, p.wait(t))
		})
	}
}

// Ctrl-C in a terminal sends SIGINT to the whole foreground process group:
// dsh-host and its plugin alike. The plugin must leave the abort to the host.
func TestInterruptProcessGroup(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "sleep 1000")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.start(t)
	waitForCommand(t, tag, "sleep")
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	assertAborted(t, p.wait(t))
}

// assertAborted checks how dsh-host reports a command it aborted.
func assertAborted(t *testing.T, r result) {
	t.Helper()
	if r.code != 143 {
		t.Errorf("exit status %d, want 143; stderr:\n%s", r.code, r.stderr)
	}
	if want := []string{"[killed by signal: SIGTERM]"}; !slices.Equal(lines(r.stdout), want) {
		t.Errorf("stdout %q, want the lines %q", r.stdout, want)
	}
	if !strings.Contains(r.stderr, "aborted") {
		t.Errorf("stderr does not say the command was aborted:\n%s", r.stderr)
	}
}

// When dsh-host is SIGKILLed, its plugin notices and kills everything it
// started: within 2 s nothing remains.
func TestHostKilled(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "sleep 1000").start(t)
	waitForCommand(t, tag, "sleep")
	killed := time.Now()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if r := p.wait(t); r.code != -1 {
		t.Errorf("dsh-host exited %d, want killed by SIGKILL", r.code)
	}
	left := survivors(tag)
	if took := time.Since(killed); len(left) > 0 || took > 2*time.Second {
		t.Errorf("%d processes still ran %s after dsh-host was killed", len(left), took.Round(time.Millisecond))
	}
}

// When dsh-host is SIGKILLed while its command ignores SIGTERM, the plugin
// still escalates to SIGKILL after the kill grace: it must not die first,
// say of SIGPIPE when it logs to its stderr, a pipe to the dead host.
func TestHostKilledCommandIgnoresTerm(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "trap '' TERM; sleep 1000").start(t)
	waitForCommand(t, tag, "sleep")
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	const killGrace = 2 * time.Second // localexec.DefaultSettings.KillGraceMs
	if left := survivorsAfter(tag, killGrace+survivorWait); len(left) > 0 {
		t.Errorf("%d processes survived dsh-host's death by more than the kill grace", len(left))
	}
}

// SIGTERM to dsh-host's whole process group (`kill %1` in a shell, coreutils
// timeout, a supervisor stopping a group) aborts the command like a SIGTERM
// to dsh-host alone: the plugin sits in a group of its own and is shut down
// in order, so the command is not orphaned.
func TestTerminateProcessGroup(t *testing.T) {
	tag := scenario(t)
	p := command(t, tag, "run", "--", "sleep 1000")
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.start(t)
	waitForCommand(t, tag, "sleep")
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	assertAborted(t, p.wait(t))
}
