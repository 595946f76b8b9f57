package container

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/ownedtemp"
)

// dialSide connects to the side stream's socket as the agent would, from
// this process.
func dialSide(t *testing.T, s *sideListener) chan error {
	t.Helper()
	dialed := make(chan error, 1)
	go func() {
		c, err := net.Dial("unix", filepath.Join(s.dir, sideSocketName))
		if err == nil {
			// Held until the other side closes it.
			_, _ = c.Read(make([]byte, 1))
			c.Close()
		}
		dialed <- err
	}()
	return dialed
}

// The connection is taken from the container's init or its child alone:
// here this process connects, as a child of its parent, and is refused
// when another process is named the init. Either way the socket and its
// directories are gone once accept returns, and nothing else can connect.
func TestOnlyTheAgentMayConnect(t *testing.T) {
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for _, tc := range []struct {
		name string
		init int
		ok   bool
	}{
		{"this process's parent as the init", os.Getppid(), true},
		{"another process as the init", other.Process.Pid, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := listenSide()
			if err != nil {
				t.Fatal(err)
			}
			dialed := dialSide(t, s)
			c, err := s.accept(t.Context(), func(context.Context) (int, error) { return tc.init, nil }, nil)
			if tc.ok != (err == nil) {
				t.Errorf("accept: %v, want accepted %v", err, tc.ok)
			}
			if c != nil {
				c.Close()
			}
			if err := <-dialed; err != nil {
				t.Errorf("the dial: %v", err)
			}
			if _, err := os.Stat(s.parent); !os.IsNotExist(err) {
				t.Errorf("the side stream's directory after accept: %v, want it removed", err)
			}
			if c, err := net.Dial("unix", filepath.Join(s.dir, sideSocketName)); err == nil {
				c.Close()
				t.Error("a second connection was made after accept")
			}
		})
	}
}

// A side stream is not waited for once the agent's stream ended: no
// connection will come.
func TestAnEndedAgentIsNotWaitedFor(t *testing.T) {
	s, err := listenSide()
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	close(ended)
	began := time.Now()
	if _, err := s.accept(t.Context(), func(context.Context) (int, error) { return 0, nil }, ended); err == nil {
		t.Error("accept returned a connection when none was made")
	}
	if took := time.Since(began); took >= sideWait {
		t.Errorf("accept waited %v for an agent whose stream had ended", took)
	}
	if _, err := os.Stat(s.parent); !os.IsNotExist(err) {
		t.Errorf("the side stream's directory after accept: %v, want it removed", err)
	}
}

// A side stream's directory left by a dead plugin is swept; a live one's
// is kept.
func TestDeadPluginsSideDirectoriesAreSwept(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadDir := filepath.Join(os.TempDir(), sidePrefix+"678")
	live, err := listenSide()
	if err != nil {
		t.Fatal(err)
	}
	defer live.close()
	if err := os.Mkdir(deadDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deadDir, ownedtemp.OwnerFile), []byte(strconv.Itoa(dead.Process.Pid)+" 12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	sweepSideDirs()
	if _, err := os.Stat(deadDir); !os.IsNotExist(err) {
		t.Errorf("a dead plugin's %s: %v, want it removed", deadDir, err)
	}
	if _, err := os.Stat(live.parent); err != nil {
		t.Errorf("this plugin's %s: %v, want it kept", live.parent, err)
	}
}
