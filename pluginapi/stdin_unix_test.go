//go:build linux

package pluginapi

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// detachStdin leaves /dev/null on fd 0, whatever was there (a host's pipe).
func TestDetachStdinPutsDevNullOnFd0(t *testing.T) {
	saved, err := unix.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = unix.Dup2(saved, 0)
		unix.Close(saved)
	}()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := unix.Dup2(int(r.Fd()), 0); err != nil {
		t.Fatal(err)
	}
	if err := detachStdin(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.Readlink("/proc/self/fd/0"); err != nil || got != os.DevNull {
		t.Errorf("fd 0 after detachStdin: %q (%v), want %s", got, err, os.DevNull)
	}
}
