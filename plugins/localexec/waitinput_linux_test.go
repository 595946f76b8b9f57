package localexec

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Waiting for input, as programs wait: read(2) on the terminal (bash's
// read, cat, python's input), pselect6 (readline: an interactive bash, the
// python REPL), poll or epoll (less, vim, node), and on an open stdin; and
// not waiting: a sleep, a read of another pipe, a busy loop, a process
// stopped in the background of its terminal.
func TestWaitingForInputAsProgramsWait(t *testing.T) {
	e := interactiveExecutor(t)
	for _, tc := range []struct {
		name, command string
		terminal      bool
		needs         string
		waits         bool
	}{
		{"bash read on a terminal", "read -r x", true, "", true},
		{"cat on a terminal", "cat", true, "", true},
		{"an interactive bash at its prompt", "exec bash --norc --noprofile -i", true, "", true},
		{"python input()", `python3 -c 'input("? ")'`, true, "python3", true},
		{"the python REPL", "python3 -q -i", true, "python3", true},
		{"less", "seq 1000 | less", true, "less", true},
		{"vim", "vim -u NONE -N", true, "vim", true},
		{"node's REPL", "node -i", true, "node", true},
		{"cat on an open stdin", "cat", false, "", true},
		{"read in a child on an open stdin", "sh -c 'read -r x'; echo done", false, "", true},
		{"a sleep on a terminal", "sleep 100", true, "", false},
		{"a sleep on an open stdin", "sleep 100", false, "", false},
		{"cat of another pipe, on a terminal", "sleep 100 | cat", true, "", false},
		{"a busy loop on a terminal", "while :; do :; done", true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs != "" {
				if _, err := exec.LookPath(tc.needs); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("no %s here: under CI=true .ci/run installs it", tc.needs)
					}
					t.Skipf("no %s here", tc.needs)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req := pluginapi.ExecRequest{Command: tc.command, OpenStdin: !tc.terminal}
			if tc.terminal {
				req.Terminal = &pluginapi.Terminal{Rows: 24, Cols: 80}
			}
			spec, err := e.Resolve(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				_, _ = p.Kill(ctx)
				if _, err := p.Wait(ctx); err != nil {
					t.Errorf("the process did not settle after Kill: %v", err)
				}
			}()
			// Up to 5 s for a program to reach its read (node and vim
			// take a moment); a program that does not wait is read for
			// a second and never seen waiting.
			deadline := time.Now().Add(5 * time.Second)
			if !tc.waits {
				deadline = time.Now().Add(time.Second)
			}
			var out strings.Builder
			seen := false
			for time.Now().Before(deadline) && !seen {
				r, err := p.ReadOutput(ctx)
				if err != nil {
					t.Fatal(err)
				}
				out.WriteString(r.Delta)
				seen = r.WaitingForInput
				time.Sleep(25 * time.Millisecond)
			}
			if seen != tc.waits {
				t.Errorf("%s: said to wait for input: %v, want %v; output %q", tc.name, seen, tc.waits, out.String())
			}
		})
	}
}
