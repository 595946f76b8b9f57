//go:build unix

package pluginapi

import (
	"os"

	"golang.org/x/sys/unix"
)

// detachStdin puts /dev/null on the plugin's standard input. go-plugin
// hands a plugin its host's stdin, which under `dsh-host mcp` is the
// client's protocol pipe: a plugin, or anything it starts, that read it
// would take the client's messages. A plugin reads nothing there.
func detachStdin() error {
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	return unix.Dup2(int(null.Fd()), 0)
}
