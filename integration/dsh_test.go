package integration

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// runTimeout bounds one dsh-host process; nothing here should take a tenth
// of it.
const runTimeout = 60 * time.Second

// scenario gives a test a fresh tag and, when the test ends, asserts that no
// process tagged with it survives.
func scenario(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	tag := hex.EncodeToString(b)
	t.Cleanup(func() { assertGone(t, tag) })
	return tag
}

// result is how one dsh-host process ended.
type result struct {
	stdout, stderr string
	code           int // -1 when a signal killed dsh-host itself
	elapsed        time.Duration
}

// proc is a running dsh-host.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr strings.Builder
	began          time.Time
	waited         bool
}

// command prepares dsh-host with args, tagged tag, to run in a scratch
// directory.
func command(t *testing.T, tag string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bins.host, args...)}
	p.cmd.Env = append(os.Environ(), tagVar+"="+tag)
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.WaitDelay = 5 * time.Second // a leaked pipe holder must not hang the test
	return p
}

// start starts dsh-host. It is killed after runTimeout, and when the test
// ends without waiting for it.
func (p *proc) start(t *testing.T) *proc {
	t.Helper()
	p.began = time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting dsh-host: %v", err)
	}
	timer := time.AfterFunc(runTimeout, func() { _ = p.cmd.Process.Kill() })
	t.Cleanup(func() {
		timer.Stop()
		if !p.waited {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// wait waits for dsh-host to exit.
func (p *proc) wait(t *testing.T) result {
	t.Helper()
	err := p.cmd.Wait()
	p.waited = true
	r := result{stdout: p.stdout.String(), stderr: p.stderr.String(), elapsed: time.Since(p.began)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("dsh-host %q: %v\nstderr:\n%s", p.cmd.Args[1:], err, r.stderr)
	}
	return r
}

// dsh runs dsh-host with args to completion, tagged tag.
func dsh(t *testing.T, tag string, args ...string) result {
	t.Helper()
	return command(t, tag, args...).start(t).wait(t)
}

// waitForCommand waits until the scenario's command, whose argv[0] is name,
// runs under the plugin, and checks that the /proc scan sees all three
// kinds of process: dsh-host, its plugin, and the command.
func waitForCommand(t *testing.T, tag, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var host, plugin, cmd bool
		for _, pid := range ours(tag) {
			argv := argvOf(pid)
			switch {
			case len(argv) == 0:
			case argv[0] == name:
				cmd = true
			case slices.Contains(argv, "serve") || strings.HasSuffix(argv[0], "dsh-executor-bash-local"):
				plugin = true
			case argv[0] == bins.host:
				host = true
			}
		}
		if host && plugin && cmd {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("dsh-host, its plugin and %s were not all seen running", name)
}

// lines splits output into its lines, without the final newline.
func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
