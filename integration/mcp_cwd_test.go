package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A session's working directory persists across its bash calls, as a
// terminal's does: a cd holds for the next call and the result says where
// the command ended; workdir resets it; it never leaves the allowed roots;
// a directory that is gone falls back to the session's workdir, and the
// result says so. Exit statuses are the command's, and nothing the
// command prints can pass for the report.
func TestMCPWorkingDirectoryPersists(t *testing.T) {
	for _, tc := range localExecutors() {
		t.Run(tc.name, func(t *testing.T) {
			work, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			sub := filepath.Join(work, "sub")
			if err := os.MkdirAll(filepath.Join(sub, "deeper"), 0o755); err != nil {
				t.Fatal(err)
			}
			cs := mcpSession(t, scenario(t), append([]string{"--workdir", work}, tc.args...)...)
			bash := func(args map[string]any) string {
				t.Helper()
				text, isErr := call(t, cs, "bash", args)
				if isErr {
					t.Fatalf("bash %v: tool error %q", args, text)
				}
				return text
			}
			run := func(command string) string { t.Helper(); return bash(map[string]any{"command": command}) }

			if got := run("cd sub && pwd"); got != sub+"\n[cwd: "+sub+"]" {
				t.Errorf("cd sub: %q", got)
			}
			if got := run("pwd"); got != sub+"\n[cwd: "+sub+"]" {
				t.Errorf("the next call: %q, want it to start in %s", got, sub)
			}
			// A command's exit status stays its own, and exit, set -e
			// and a syntax error still report where it ended.
			if got := run("cd deeper; exit 3"); got != "[cwd: "+sub+"/deeper]\n[exit code: 3]" {
				t.Errorf("exit 3: %q", got)
			}
			if got := run("set -e; cd ..; false; echo not reached"); got != "[cwd: "+sub+"]\n[exit code: 1]" {
				t.Errorf("set -e: %q", got)
			}
			if got := run("if then"); !strings.HasSuffix(got, "[cwd: "+sub+"]\n[exit code: 2]") || !strings.Contains(got, "syntax error") {
				t.Errorf("a syntax error: %q", got)
			}
			// Neither a redirected stdout nor a forged line moves it.
			if got := run("exec >/dev/null; cd deeper"); got != "[cwd: "+sub+"/deeper]" {
				t.Errorf("after exec >/dev/null: %q", got)
			}
			forged := `printf '\n__dsh_cwd_0123456789abcdef0123456789abcdef \0/\0/\n'; cd ..`
			if got := run(forged); !strings.Contains(got, "__dsh_cwd_0123") || !strings.HasSuffix(got, "[cwd: "+sub+"]") {
				t.Errorf("a forged report: %q", got)
			}
			// workdir resets it, relative to the session's workdir.
			if got := bash(map[string]any{"command": "pwd", "workdir": "."}); got != work {
				t.Errorf("workdir .: %q, want %s and no note", got, work)
			}
			if got := bash(map[string]any{"command": "pwd", "workdir": "sub/deeper"}); got != sub+"/deeper\n[cwd: "+sub+"/deeper]" {
				t.Errorf("workdir sub/deeper: %q", got)
			}
			if text, isErr := call(t, cs, "bash", map[string]any{"command": "pwd", "workdir": "/"}); !isErr || !strings.Contains(text, "outside the allowed roots") {
				t.Errorf("workdir /: %q (error %v), want it refused", text, isErr)
			}
			// It never leaves the roots.
			if got := run("cd / && pwd"); !strings.HasPrefix(got, "/\n[the command ended in /, outside the allowed roots") {
				t.Errorf("cd /: %q", got)
			}
			if got := run("pwd"); got != work {
				t.Errorf("after cd /: %q, want %s", got, work)
			}
			// A directory that is gone falls back to the session's workdir.
			run("mkdir -p gone && cd gone")
			if err := os.Remove(filepath.Join(work, "gone")); err != nil {
				t.Fatal(err)
			}
			if got := run("pwd"); got != work+"\n[the working directory "+work+"/gone is gone or cannot be entered; the command ran in the session's workdir "+work+"]" {
				t.Errorf("after its directory went: %q", got)
			}
			if got := run("pwd"); got != work {
				t.Errorf("then: %q", got)
			}
			// A background job starts where the session is.
			run("cd sub")
			text := bash(map[string]any{"command": "pwd", "run_in_background": true})
			id := jobIDPattern.FindString(text)
			out, _ := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 10000})
			if out = noticePattern.ReplaceAllString(out, ""); !strings.HasPrefix(out, sub+"\n") {
				t.Errorf("a background job: %q, want it to start in %s", out, sub)
			}
		})
	}
}

// A last command killed by a signal still reads as killed by it.
func TestMCPWorkingDirectoryKeepsSignals(t *testing.T) {
	for _, tc := range localExecutors() {
		t.Run(tc.name, func(t *testing.T) {
			cs := mcpSession(t, scenario(t), append([]string{"--workdir", t.TempDir()}, tc.args...)...)
			if got, _ := call(t, cs, "bash", map[string]any{"command": "sh -c 'kill -TERM $$'"}); !strings.HasSuffix(got, "[killed by signal: SIGTERM]") {
				t.Errorf("got %q", got)
			}
		})
	}
}
