package localexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// With an editor inherited that waits for a person (here one that sleeps),
// git commit without a message fails at once, and git rebase -i proceeds
// at once: no editor runs, and nothing waits out the timeout.
func TestGitNeverWaitsForAnEditor(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed:", err)
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "editor-ran")
	editor := filepath.Join(dir, "editor")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\ntouch "+mark+"\nexec sleep 1000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"EDITOR", "VISUAL", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR"} {
		t.Setenv(name, editor)
	}
	repo := filepath.Join(dir, "repo")
	const timeout = 30 * time.Second
	e := bashExecutor(t)
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Workdir: dir, TimeoutMs: timeout.Milliseconds(), Command: `echo "pid $$"
git init -q repo && cd repo && git config user.name t && git config user.email t@example.com
git commit -q --allow-empty -m one && git commit -q --allow-empty -m two
git commit --allow-empty; echo "commit: $?"
git rebase -q -i HEAD~1; echo "rebase: $?"`})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	out := res.Stdout.Text
	if res.TimedOut || took > timeout/2 {
		t.Errorf("the run took %s (timed out %v): git waited for the inherited editor", took, res.TimedOut)
	}
	if !strings.Contains(out, "commit: 1\n") || !strings.Contains(res.Stderr.Text, "empty commit message") {
		t.Errorf("git commit without a message: stdout %q, stderr %q; want it to fail at once on the empty message", out, res.Stderr.Text)
	}
	if !strings.Contains(out, "rebase: 0\n") {
		t.Errorf("git rebase -i: stdout %q, stderr %q; want it to proceed with its list as given", out, res.Stderr.Text)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("the inherited editor ran")
	}
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		t.Errorf("the repository was not made: %v", err)
	}
	pidText, _, _ := strings.Cut(strings.TrimPrefix(out, "pid "), "\n")
	if pid, err := strconv.Atoi(pidText); err != nil || !pidGone(pid) {
		t.Errorf("the command's shell (%q) is still running", pidText)
	}
}
