package agentbin

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Find takes an agent for the target's architecture, and refuses what is
// missing, not a file, or built for another.
func TestFind(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Find(self, runtime.GOARCH, "the target"); err != nil || got != self {
		t.Errorf("Find(this test binary, %s) = %q, %v", runtime.GOARCH, got, err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	dir := t.TempDir()
	for _, tc := range []struct{ path, arch, want string }{
		{filepath.Join(dir, "none"), runtime.GOARCH, "the agent for linux/" + runtime.GOARCH + ": "},
		{dir, runtime.GOARCH, "is not a file"},
		{self, other, "is built for " + ELFArch(self) + ", the image for " + other},
	} {
		if runtime.GOOS != "linux" && strings.Contains(tc.want, "built for") {
			continue // not an ELF binary here
		}
		if _, err := Find(tc.path, tc.arch, "the image"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Find(%s, %s): %v, want %q", tc.path, tc.arch, err, tc.want)
		}
	}
}

func TestUnameArch(t *testing.T) {
	for in, want := range map[string]string{"x86_64\n": "amd64", "aarch64": "arm64", "arm64": "arm64", "riscv64": ""} {
		if got := UnameArch(in); got != want {
			t.Errorf("UnameArch(%q) = %q, want %q", in, got, want)
		}
	}
}

// Each line of the agent's stderr is logged after where it runs.
func TestStderr(t *testing.T) {
	var b bytes.Buffer
	w := Stderr{W: &b, Where: "box"}
	w.Write([]byte("one\ntwo\n"))
	w.Write([]byte("three\n"))
	if got, want := b.String(), "box: one\nbox: two\nbox: three\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
