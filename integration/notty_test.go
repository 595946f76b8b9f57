package integration

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ttyProbe prints whether the command leads a session of its own (its
// session's id, as its PID namespace sees it, against its own pid), then
// tries the controlling terminal.
const ttyProbe = `read -r _ _ _ _ _ sid _ </proc/$$/stat; echo "own session: $([ "$sid" = $$ ] && echo yes || echo "no ($sid, not $$)")"; ` +
	`read -t 5 x </dev/tty; echo "tty read: $?"`

// ttyProbeTimeout is the run's timeout: a command stopped on SIGTTIN waits
// all of it.
const ttyProbeTimeout = 20 * time.Second

// checkTTYProbe checks ttyProbe's output: its own session, and a /dev/tty
// that fails at once (1: no such device) rather than a stop until the
// timeout or a read that timed out (above 128).
func checkTTYProbe(t *testing.T, out string, elapsed time.Duration) {
	t.Helper()
	out = strings.ReplaceAll(out, "\r", "")
	if !strings.Contains(out, "own session: yes\n") {
		t.Errorf("output %q: the command does not lead a session of its own", out)
	}
	if !strings.Contains(out, "tty read: 1\n") {
		t.Errorf("output %q: /dev/tty did not fail at once; want \"tty read: 1\" (no controlling terminal)", out)
	}
	if elapsed > ttyProbeTimeout/2 {
		t.Errorf("the run took %s: the command waited on the terminal (SIGTTIN) instead of failing at once", elapsed)
	}
}

// Run from a terminal (script(1) gives dsh-host a pty as its controlling
// terminal, and the foreground), a command has no controlling terminal:
// it leads a session of its own, and `read x </dev/tty` fails at once.
// Were the command only in a group of its own, in dsh-host's session, it
// would be a background group of the terminal, stopped on SIGTTIN until
// its timeout.
func TestRunFromATerminalGivesCommandsNone(t *testing.T) {
	scriptPath, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed:", err)
	}
	for _, tc := range localExecutors() {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--timeout", ttyProbeTimeout.String(), "--workdir", t.TempDir()}, tc.args...)
			line := shQuote(bins.host)
			for _, a := range append(args, "--", ttyProbe) {
				line += " " + shQuote(a)
			}
			p := command(t, scenario(t))
			p.cmd.Path, p.cmd.Args = scriptPath, []string{"script", "-qec", line, os.DevNull}
			res := p.start(t).wait(t)
			if res.code != 0 {
				t.Errorf("script(1) running dsh-host: exit %d, stdout %q, stderr:\n%s", res.code, res.stdout, res.stderr)
			}
			checkTTYProbe(t, res.stdout, res.elapsed)
		})
	}
}

// The agent (what the container and SSH executors run) is bash-local too:
// started with a terminal as its controlling one, in the terminal's
// foreground, its commands have none.
func TestAgentWithATerminalGivesCommandsNone(t *testing.T) {
	tty := openTerminal(t)
	a := startAgentWith(t, scenario(t), func(cmd *exec.Cmd) {
		cmd.ExtraFiles = []*os.File{tty}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*ttyProbeTimeout)
	defer cancel()
	began := time.Now()
	res, err := pluginapi.RunRequest(ctx, a.x, pluginapi.ExecRequest{Command: ttyProbe, TimeoutMs: ttyProbeTimeout.Milliseconds()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkTTYProbe(t, res.Stdout.Text, time.Since(began))
}

// localExecutor is a way to run commands on this machine: dsh-host run's
// arguments that choose it.
type localExecutor struct {
	name string
	args []string
}

// localExecutors are the executors that run commands on this machine.
func localExecutors() []localExecutor {
	return []localExecutor{
		{"built-in bash-local", nil},
		{"standalone plugin", []string{"--executor", bins.plugin}},
		{"bash-sandbox", []string{"--executor", "bash-sandbox"}},
	}
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
