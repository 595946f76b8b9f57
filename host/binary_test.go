package host_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/registry"
)

// A reload of a binary that has become replaceable by others is refused:
// the old plugin keeps serving, and Reload says why. Watching it is refused
// too.
func TestAReloadOfABinaryThatBecameUnsafeIsRefused(t *testing.T) {
	dir := t.TempDir()
	bin, _ := copyPlugin(t, dir)
	r := runtimeOn(t, bin, 0)
	_, pid := r.Generation()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	err := r.Reload(context.Background())
	if !errors.Is(err, registry.ErrUnsafeBinary) || !strings.Contains(err.Error(), "old executor stays") ||
		!strings.Contains(err.Error(), dir+", a directory anyone may write") {
		t.Fatalf("Reload of a binary in a 0777 directory: %v, want a refusal naming the directory", err)
	}
	if gen, now := r.Generation(); gen != 1 || now != pid {
		t.Errorf("generation %d plugin %d, want the old 1 and %d", gen, now, pid)
	}
	if got := runOut(t, r, "echo still here"); got != "still here\n" {
		t.Errorf("the old executor answered %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WatchBinary(ctx, bin, 0); !errors.Is(err, registry.ErrUnsafeBinary) || ctx.Err() != nil {
		t.Errorf("WatchBinary of an unsafe binary: %v, want a refusal at once", err)
	}
}

// A binary beneath a writable root is refused at the first launch; pinned
// by its checksum it runs, from a private copy that goes with the runtime,
// and a reload to other content is refused.
func TestABinaryUnderAWritableRootRunsOnlyPinned(t *testing.T) {
	workspace := t.TempDir()
	bin, data := copyPlugin(t, workspace)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := host.RuntimeOptions{Options: host.Options{
		Executor:      host.Executor{Name: "bash-local", Path: bin},
		WritableRoots: []string{workspace},
	}}
	if _, err := host.StartRuntime(ctx, opts); !errors.Is(err, registry.ErrUnsafeBinary) ||
		!strings.Contains(err.Error(), "executor "+bin+" lies under the sandbox writable root "+workspace) {
		t.Fatalf("StartRuntime: %v, want a refusal naming the binary and the root", err)
	}

	sum := sha256.Sum256(data)
	opts.Executor.Checksum = sum[:]
	r, err := host.StartRuntime(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = r.Close(context.Background())
		}
	}()
	_, pid := r.Generation()
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		t.Fatal(err)
	}
	if exe == bin || strings.HasPrefix(exe, workspace) {
		t.Fatalf("the pinned plugin runs %s, want a private copy", exe)
	}
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- r.WatchBinary(wctx, bin, time.Hour) }()
	time.Sleep(100 * time.Millisecond)
	stopWatch()
	if err := <-watched; err != nil {
		t.Errorf("watching a pinned binary: %v", err)
	}

	// A command in the workspace replaces the binary: the pin refuses it.
	next := filepath.Join(workspace, ".next")
	if err := os.WriteFile(next, []byte("#!/bin/sh\ntouch "+filepath.Join(workspace, "pwned")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	if err := r.Reload(ctx); !errors.Is(err, registry.ErrChecksumMismatch) {
		t.Fatalf("Reload of a replaced pinned binary: %v, want a checksum mismatch", err)
	}
	if _, err := os.Stat(filepath.Join(workspace, "pwned")); err == nil {
		t.Fatal("the replaced binary ran")
	}
	if gen, now := r.Generation(); gen != 1 || now != pid {
		t.Errorf("generation %d plugin %d, want the old 1 and %d", gen, now, pid)
	}
	closed = true
	if err := r.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(exe); !os.IsNotExist(err) {
		t.Errorf("the private copy %s outlived the runtime: %v", exe, err)
	}
}
