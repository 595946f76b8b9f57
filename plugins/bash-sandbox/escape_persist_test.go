//go:build linux

package bashsandbox_test

// Persistence (issue 36): a confined command must not plant, inside its
// writable roots, what tools outside run later: git hooks and
// configuration, agent hosts' and editors' configurations, shell rc files.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/protect/persisttest"
	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

func TestContainPersistence(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	persisttest.Run(t, func(t *testing.T, ws, command string, home bool) pluginapi.RunResult {
		if home {
			t.Setenv("HOME", ws)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, Workdir: ws, SandboxMode: pluginapi.SandboxWorkspaceWrite}, nil)
		if err != nil {
			t.Fatalf("%s: %v", command, err)
		}
		if res.Sandbox == nil || res.Sandbox.Mode != pluginapi.SandboxWorkspaceWrite || res.Sandbox.RunnerFailure != "" {
			t.Fatalf("not confined in workspace-write: %+v", res.Sandbox)
		}
		return res
	})
}

// runWW runs command in workspace-write with workdir ws.
func runWW(t *testing.T, x *bashsandbox.Executor, ws, command string) pluginapi.RunResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: command, Workdir: ws, SandboxMode: pluginapi.SandboxWorkspaceWrite}, nil)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return res
}

// A write refused at a protected path is a likely denial with its
// evidence, and the facts list the protected paths in force; what is not
// protected stays writable, and the placeholders go with the executor.
func TestProtectedPathsAreFactsAndDenials(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	for _, c := range []struct{ command, evidence string }{
		{"echo x > .git/hooks/pre-commit", "Read-only file system"},
		{"echo '{}' > .mcp.json", "Is a directory"},
		{"mv .git .git-old", "Device or resource busy"},
	} {
		res := runWW(t, x, ws, c.command)
		if res.ExitCode == nil || *res.ExitCode == 0 {
			t.Errorf("%s: exit %v, want a refusal", c.command, res.ExitCode)
		}
		sb := res.Sandbox
		if sb == nil || !sb.LikelyDenial || len(sb.DeniedProtected()) == 0 || !strings.Contains(strings.Join(sb.Evidence, "\n"), c.evidence) {
			t.Errorf("%s: facts %+v, want a likely denial naming a protected path, with %q", c.command, sb, c.evidence)
		}
	}
	res := runWW(t, x, ws, "echo ok > notes.txt && cat notes.txt")
	if res.ExitCode == nil || *res.ExitCode != 0 || res.Sandbox.LikelyDenial {
		t.Errorf("an ordinary write: exit %v, facts %+v, stderr %q", res.ExitCode, res.Sandbox, res.Stderr.Text)
	}
	for _, p := range []string{".git", ".git/hooks", ".git/config", ".mcp.json", ".vscode", ".claude"} {
		if !slices.Contains(res.Sandbox.ProtectedPaths, filepath.Join(ws, p)) {
			t.Errorf("%s is not among the protected paths in force: %q", p, res.Sandbox.ProtectedPaths)
		}
	}
	if !slices.Contains(res.Sandbox.Enforced, "protected-paths") {
		t.Errorf("enforced %q", res.Sandbox.Enforced)
	}
	if err := x.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf("a placeholder outlived the executor: %v", err)
	}
}

// A default unprotected by name in the settings is writable, and the
// facts say so; a name that is no default is refused.
func TestUnprotectedPathsAreSaid(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{UnprotectedPaths: []string{".vscode"}, ProtectedPaths: []string{"deploy.sh"}})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, "mkdir -p .vscode && echo '{}' > .vscode/tasks.json; echo x > deploy.sh")
	if _, err := os.Stat(filepath.Join(ws, ".vscode/tasks.json")); err != nil {
		t.Errorf("an unprotected default stayed protected: %v (stderr %q)", err, res.Stderr.Text)
	}
	if fi, err := os.Stat(filepath.Join(ws, "deploy.sh")); err == nil && fi.Mode().IsRegular() {
		t.Error("an extra protected path was created")
	}
	if !slices.Equal(res.Sandbox.Unprotected, []string{".vscode"}) || slices.Contains(res.Sandbox.ProtectedPaths, filepath.Join(ws, ".vscode")) {
		t.Errorf("facts %+v, want .vscode unprotected", res.Sandbox)
	}
	if _, err := bashsandbox.New(bashsandbox.SandboxPolicy{UnprotectedPaths: []string{".vs"}}); err == nil || !strings.Contains(err.Error(), "not a default protected path") {
		t.Errorf("unprotecting what is no default: %v", err)
	}
}

// What agents do with git all day still works in the default: commit,
// branch, rebase without an editor, stash, tag, gc.
func TestGitWorkKeepsWorking(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	res := runWW(t, x, ws, `set -e
export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.invalid GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.invalid GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
echo a > a; git add a; git commit -qm a
git checkout -qb feature; echo b > b; git add b; git commit -qm b
git checkout -q main; echo c > c; git add c; git commit -qm c
git checkout -q feature; git rebase -q main
echo d >> a; git stash -q; git stash pop -q; git commit -qam d
git tag v1; git branch -q -D main; git gc -q
git log --format=%s | tr '\n' ' '`)
	if res.ExitCode == nil || *res.ExitCode != 0 || strings.TrimSpace(res.Stdout.Text) != "d b c a init" {
		t.Errorf("git work: exit %v, stdout %q, stderr %q", res.ExitCode, res.Stdout.Text, res.Stderr.Text)
	}
}

// git itself, confined, cannot write its hooks or configuration: `git
// config --local`, `git init` over the repository with a template of
// hooks, `git remote add`; what it tried is fired outside.
func TestContainGitIntoProtectedPaths(t *testing.T) {
	noneLeft(t)
	needTool(t, "git")
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	for _, c := range []struct{ name, plant, fire string }{
		{"git config --local", `git config --local alias.st '!touch MARK'`, "st"},
		{"git init with a template of hooks", `mkdir -p tpl/hooks && printf '#!/bin/sh\ntouch MARK\n' > tpl/hooks/post-commit && chmod +x tpl/hooks/post-commit && git init -q --template=tpl`, "commit -q --allow-empty -m x"},
		{"git init into a moved .git", `mv .git g; git init -q && git config alias.st '!touch MARK'`, "st"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ws := persisttest.NewRepo(t)
			mark := filepath.Join(t.TempDir(), "fired")
			res := runWW(t, x, ws, "export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null; "+strings.ReplaceAll(c.plant, "MARK", mark))
			t.Logf("plant: exit %v, stderr %.300q", res.ExitCode, res.Stderr.Text)
			cmd := exec.Command("git", strings.Fields(c.fire)...)
			cmd.Dir = ws
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
				"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.invalid", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.invalid")
			out, err := cmd.CombinedOutput()
			t.Logf("outside: git %s: %v %.200q", c.fire, err, out)
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("ESCAPE (persistence): %s planted what git ran outside", c.name)
			}
		})
	}
}

// A placeholder removed outside (a user's git clean -d) takes its mount
// with it: the next command runs under a spawner that protects the path
// again.
func TestAPlaceholderRemovedOutsideIsProtectedAgain(t *testing.T) {
	noneLeft(t)
	x := newExecutor(t, bashsandbox.SandboxPolicy{})
	ws := persisttest.NewRepo(t)
	if res := runWW(t, x, ws, "true"); res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("true: %+v", res)
	}
	mcp := filepath.Join(ws, ".mcp.json")
	if err := os.Remove(mcp); err != nil {
		t.Fatalf("the placeholder: %v", err)
	}
	res := runWW(t, x, ws, `printf '{"mcpServers":{}}' > .mcp.json`)
	if fi, err := os.Lstat(mcp); err == nil && fi.Mode().IsRegular() {
		t.Errorf("ESCAPE (persistence): .mcp.json was made once its placeholder went (exit %v, stderr %q)", res.ExitCode, res.Stderr.Text)
	}
}
