package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A Go program that launches dsh-host's built-in executors from its own
// binary serves them with one line at the top of main; without that line
// its launch fails at once, saying what is missing, instead of starting
// itself again and again.
func TestEmbeddedBuiltinExecutors(t *testing.T) {
	run := func(t *testing.T, tag string, env ...string) (stdout, stderr string, code int, took time.Duration) {
		t.Helper()
		cmd := exec.Command(bins.embed)
		cmd.Env = append(append(os.Environ(), tagVar+"="+tag), env...)
		cmd.Dir = t.TempDir()
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		cmd.WaitDelay = 5 * time.Second
		began := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(runTimeout, func() { _ = cmd.Process.Kill() })
		defer timer.Stop()
		err := cmd.Wait()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("embed: %v\n%s", err, errOut.String())
		}
		return out.String(), errOut.String(), code, time.Since(began)
	}

	t.Run("with the dispatch", func(t *testing.T) {
		tag := scenario(t)
		stdout, stderr, code, _ := run(t, tag)
		if code != 0 || stdout != "embedded\n" {
			t.Errorf("exit %d, stdout %q, want 0 and %q\nstderr:\n%s", code, stdout, "embedded\n", stderr)
		}
	})

	t.Run("without it", func(t *testing.T) {
		tag := scenario(t) // and nothing of it survives: no chain of launches
		stdout, stderr, code, took := run(t, tag, "EMBED_NO_DISPATCH=1")
		if code == 0 {
			t.Fatalf("the launch without the dispatch succeeded: %q", stdout)
		}
		if !strings.Contains(stderr, "builtins.ServeIfAsked()") {
			t.Errorf("the failure does not say what is missing:\n%s", stderr)
		}
		if took > 20*time.Second {
			t.Errorf("the failure took %s", took)
		}
	})
}
