package container_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/plugins/container"
)

// Calls cross the side stream, and nothing in the container can use its
// socket: once the agent connected the socket is gone, its directory is
// read-only there, and its directory on this machine is removed.
func TestCallsCrossTheSideStreamAloneTheAgentConnected(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			before := container.SideStreamsOpened.Load()
			x := newExecutor(t, addr, nil)
			res := run(t, x, "", `ls -A /.dsh/run; echo "ls: $?"; touch /.dsh/run/x 2>/dev/null; echo "touch: $?"`)
			if got := res.Stdout.Text; got != "ls: 0\ntouch: 1\n" {
				t.Errorf("in the container, the side stream's directory: %q, want it empty and read-only (%q)", got, "ls: 0\ntouch: 1\n")
			}
			if n := container.SideStreamsOpened.Load() - before; n != 1 {
				t.Errorf("%d side streams opened for one container, want 1 (calls crossed the attached stream)", n)
			}
			left, _ := filepath.Glob(filepath.Join(os.TempDir(), "dsh-side-"+strings.ReplaceAll(container.PluginLabel(), "@", "-")+"-*"))
			if len(left) > 0 {
				t.Errorf("the side stream's directory is still on this machine once the agent connected: %v", left)
			}
		})
	}
}

// Where the side stream cannot work the container still serves, calls
// crossing the attached stream, without waiting out the agent's
// connection, and nothing is left behind: an engine that cannot see this
// machine's temporary directory either refuses the mount (as Docker
// Desktop does with a path it does not share; here a source that is no
// path) or mounts a directory of its own (here one that does not exist,
// which Docker and Podman make, empty), where the agent finds no socket.
// The plugin's wait for the agent is made a minute long, so that a first
// run well under it shows the wait was cut short, on a loaded machine too.
func TestWithoutItsSideStreamTheContainerServesAtOnce(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		for _, c := range []struct{ what, source string }{
			{"mount refused", "not/a/path"},
			{"no socket there", ""}, // a directory beneath the test's, not made
		} {
			t.Run(name+"/"+c.what, func(t *testing.T) {
				addr := engine(t, name)
				source := c.source
				if source == "" {
					source = filepath.Join(t.TempDir(), "missing")
				}
				container.BreakSideMounts(t, source)
				container.LongSideWait(t, time.Minute)
				before := container.SideStreamsOpened.Load()
				x := newExecutor(t, addr, nil)
				began := time.Now()
				if got := run(t, x, "", "echo served").Stdout.Text; got != "served\n" {
					t.Errorf("the command printed %q", got)
				}
				if took := time.Since(began); took > 30*time.Second {
					t.Errorf("the first run took %v: the plugin waited for a connection that could not come", took)
				}
				if n := container.SideStreamsOpened.Load() - before; n != 0 {
					t.Errorf("%d side streams opened where the agent could not reach one", n)
				}
				left, _ := filepath.Glob(filepath.Join(os.TempDir(), "dsh-side-"+strings.ReplaceAll(container.PluginLabel(), "@", "-")+"-*"))
				if len(left) > 0 {
					t.Errorf("a side stream's directory is left on this machine: %v", left)
				}
			})
		}
	}
}
