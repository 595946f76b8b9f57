package container_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
