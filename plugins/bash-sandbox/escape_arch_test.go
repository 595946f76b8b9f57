//go:build linux

package bashsandbox_test

// System calls through another architecture's entry (issue 14): a 64-bit
// process on x86-64 can still make i386 system calls with int $0x80, which
// have numbers of their own and which a filter written for x86-64 does
// not see. The sandbox loads a second filter that fails them all.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// buildI386Socket builds testdata/i386socket, a program that asks for a
// socket through the i386 entry, into a temporary directory, and returns
// its path. It is a module of its own, built with the go command that
// runs the tests: no C compiler, no module download.
func buildI386Socket(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		skipOrFail(t, "the go command, to build the i386 attack, is not on PATH: %v", err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "i386socket"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "i386socket")
	build := exec.Command(goTool, "build", "-buildvcs=false", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local", "GOFLAGS=", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the i386 attack: %v\n%s", err, out)
	}
	return bin
}

// An i386 socket(2) or socketcall(2) made through int $0x80 gets no
// socket in the sandbox: not an AF_INET one with the network off, not an
// AF_UNIX datagram one (which could send to any named socket it sees)
// with the network on.
func TestContainForeignArchSockets(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skipf("the i386 entry is x86-64's; %s has no such attack to try here", runtime.GOARCH)
	}
	noneLeft(t)
	// Built and tried outside before any executor of this test exists: an
	// executor claims the test process's children.
	helper := buildI386Socket(t)
	cases := []struct {
		network bool
		kind    string
	}{{false, "inet"}, {true, "unix-dgram"}}
	for _, c := range cases {
		out, err := exec.Command(helper, c.kind).Output()
		switch {
		case strings.Contains(string(out), "socket fd "):
			t.Logf("outside the sandbox, %s: %q", c.kind, out)
		case err == nil && strings.Count(string(out), " faults: no i386 entry") == 2:
			// int $0x80 faults in every process (IA32 emulation is off):
			// the kernel closes this attack itself. The runs below still
			// check that no confined command gets a socket this way, and
			// confine's TestOneFilterDecidesAsTheRules checks the filter.
			t.Logf("this kernel has no i386 entry; outside the sandbox, %s: %q", c.kind, out)
		default:
			skipOrFail(t, "this kernel runs no i386 system calls, so there is nothing to contain: outside the sandbox, %s %s gave %v, %q", helper, c.kind, err, out)
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("network=%v", c.network), func(t *testing.T) {
			noneLeft(t)
			b := &box{t: t, x: newExecutor(t, bashsandbox.SandboxPolicy{Network: c.network}), ws: filepath.Join(t.TempDir(), "ws")}
			if err := mkdir(b.ws); err != nil {
				t.Fatal(err)
			}
			for _, mode := range confinedModes {
				res := attack(t, b, mode, helper+" "+c.kind, "i386-ran")
				for _, line := range strings.Split(res.Stdout.Text, "\n") {
					if strings.Contains(line, " fd ") {
						t.Errorf("ESCAPE (i386 entry, %s, network=%v): a confined command got a socket (%s) through int $0x80: %q (stdout %q, stderr %q)",
							mode, c.network, c.kind, line, res.Stdout.Text, res.Stderr.Text)
					}
				}
			}
		})
	}
}
