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
