package localexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// The shell is looked up in PATH once, and looked up again once the file
// found is gone: a shell moved or removed is never run from where it was.
func TestShellPathFollowsAMovedShell(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	t.Setenv("PATH", first+string(os.PathListSeparator)+second)
	e := New(Config{Name: "test", Shell: "dsh-test-shell", Argv: func(c string) []string { return []string{c} }})
	defer e.Close(context.Background())
	place := func(dir string) string {
		path := filepath.Join(dir, "dsh-test-shell")
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	want := place(first)
	if got, err := e.shellPath(); err != nil || got != want {
		t.Fatalf("shellPath() = %q, %v; want %q", got, err, want)
	}
	if err := os.Remove(want); err != nil {
		t.Fatal(err)
	}
	want = place(second)
	if got, err := e.shellPath(); err != nil || got != want {
		t.Errorf("after the shell moved: shellPath() = %q, %v; want %q", got, err, want)
	}
	if err := os.Remove(want); err != nil {
		t.Fatal(err)
	}
	if got, err := e.shellPath(); !errors.Is(err, pluginapi.ErrMissingShell) {
		t.Errorf("after the shell was removed: shellPath() = %q, %v; want ErrMissingShell", got, err)
	}
}

// A shell named by the settings after another was looked up is looked up
// itself: the cache answers only for the name it found.
func TestShellPathFollowsAChangedShell(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	e := New(Config{Name: "test", Shell: "dsh-test-shell", Argv: func(c string) []string { return []string{c} }})
	defer e.Close(context.Background())
	for _, name := range []string{"dsh-test-shell", "dsh-other-shell"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := e.shellPath(); err != nil || got != filepath.Join(dir, "dsh-test-shell") {
		t.Fatalf("shellPath() = %q, %v", got, err)
	}
	e.SetShell("dsh-other-shell")
	if got, err := e.shellPath(); err != nil || got != filepath.Join(dir, "dsh-other-shell") {
		t.Errorf("after SetShell: shellPath() = %q, %v; want the other shell", got, err)
	}
	e.SetShell("")
	if got, err := e.shellPath(); err != nil || got != filepath.Join(dir, "dsh-test-shell") {
		t.Errorf("after SetShell(\"\"): shellPath() = %q, %v; want the configured shell", got, err)
	}
}

// A shell found once that is no longer executable is looked up again (and
// the next one in PATH taken), not run from the cache.
func TestShellPathDropsAShellNoLongerExecutable(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	t.Setenv("PATH", first+string(os.PathListSeparator)+second)
	e := New(Config{Name: "test", Shell: "dsh-test-shell", Argv: func(c string) []string { return []string{c} }})
	defer e.Close(context.Background())
	var paths []string
	for _, dir := range []string{first, second} {
		path := filepath.Join(dir, "dsh-test-shell")
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	if got, err := e.shellPath(); err != nil || got != paths[0] {
		t.Fatalf("shellPath() = %q, %v; want %q", got, err, paths[0])
	}
	if err := os.Chmod(paths[0], 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := e.shellPath(); err != nil || got != paths[1] {
		t.Errorf("after chmod -x: shellPath() = %q, %v; want %q", got, err, paths[1])
	}
}
