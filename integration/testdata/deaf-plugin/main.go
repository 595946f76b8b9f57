// Command deaf-plugin is a test fixture, not an executor to use: bash-local
// that, while the file named by $DSH_TEST_DEAFEN exists, removes it after
// its second Describe and closes every socket it has: the process lives on,
// but its host can no longer reach it.
package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

type deaf struct {
	*localexec.Executor
	calls atomic.Int32
}

func (d *deaf) Describe(ctx context.Context) (pluginapi.Description, error) {
	if d.calls.Add(1) == 2 {
		if mark := os.Getenv("DSH_TEST_DEAFEN"); mark != "" && os.Remove(mark) == nil {
			go func() {
				time.Sleep(50 * time.Millisecond) // this answer goes out first
				closeSockets()
			}()
		}
	}
	return d.Executor.Describe(ctx)
}

// closeSockets closes every socket descriptor of this process.
func closeSockets() {
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		link, _ := os.Readlink("/proc/self/fd/" + fd.Name())
		if strings.HasPrefix(link, "socket:") {
			if n, err := strconv.Atoi(fd.Name()); err == nil {
				_ = unix.Shutdown(n, unix.SHUT_RDWR)
			}
		}
	}
}

func main() {
	localexec.ClaimAllChildren()
	pluginapi.Serve(&deaf{Executor: bashlocal.New()})
}
