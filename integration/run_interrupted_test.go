package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A plugin SIGKILLed under `dsh-host run` does not make the command one
// that "could not run at all" (125): dsh-host says the executor lost it,
// exits 255 (its status for a command whose ending is unknown, as for a
// dropped SSH session), keeps the output that came live, in --json too,
// and leaves nothing running.
func TestRunWhosePluginIsSIGKILLed(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		name := "live"
		if asJSON {
			name = "json"
		}
		t.Run(name, func(t *testing.T) {
			tag := scenario(t)
			args := []string{"run"}
			if asJSON {
				args = append(args, "--json")
			}
			p := command(t, tag, append(args, "--", "echo started; echo on-stderr >&2; sleep 1005")...)
			stdout := &logBuffer{}
			p.cmd.Stdout = stdout
			p.start(t)
			waitForCommand(t, tag, "sleep")
			if asJSON {
				// Nothing shows when the host has the output; the
				// command wrote it before its sleep began.
				time.Sleep(time.Second)
			} else {
				for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stdout.String(), "started\n"); time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("the command's output did not show within 30s: %q", stdout.String())
					}
				}
			}
			plugin := 0
			for _, pid := range ours(tag) {
				if argv := argvOf(pid); slices.Contains(argv, "serve") {
					plugin = pid
				}
			}
			if plugin == 0 {
				t.Fatal("no plugin process found")
			}
			if err := syscall.Kill(plugin, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			r := p.wait(t)
			if r.code != 255 {
				t.Errorf("exit status %d, want 255; stderr:\n%s", r.code, r.stderr)
			}
			if !asJSON {
				if stdout.String() != "started\n" || !strings.Contains(r.stderr, "on-stderr\n") ||
					!strings.Contains(r.stderr, "the executor lost the command") || !strings.Contains(r.stderr, "exited under the command") {
					t.Errorf("stdout %q, stderr:\n%s\nwant the output as it came, then the note that the executor lost the command", stdout.String(), r.stderr)
				}
				return
			}
			var res struct {
				ExitCode    *int   `json:"exitCode"`
				Interrupted string `json:"interrupted"`
				Stdout      struct{ Text string }
				Stderr      struct{ Text string }
			}
			if err := json.Unmarshal([]byte(stdout.String()), &res); err != nil {
				t.Fatalf("--json printed %q: %v", stdout.String(), err)
			}
			if res.ExitCode != nil || !strings.Contains(res.Interrupted, "exited under the command") ||
				res.Stdout.Text != "started\n" || res.Stderr.Text != "on-stderr\n" {
				t.Errorf("--json: %+v; want no exit code, interrupted, and the output seen live", res)
			}
		})
	}
}
