package pluginapi

import (
	"os"
	"runtime"
)

// RelayProcs is the number of CPUs (GOMAXPROCS) a relay runs its Go code
// on: an executor's plugin whose commands run elsewhere, or the agent
// that runs them there. Its work per call is one goroutine's at a time
// (read a message, decode it, pass it on), and with more than one P the
// runtime hands goroutines and Ps between threads at nearly every
// wakeup: a syscall slower than sysmon's tick gives its P away, an idle P
// wakes a spinning thread. Where a context switch is dear (a VM's guest,
// where each one costs tens of microseconds), that cost more than the
// work: background output through a container, in three interleaved
// pairs on a VM of two vCPUs, came 1.2-1.4 times faster with one, and
// the plugin spent a third less CPU per MiB. The commands themselves are
// other processes, on every CPU.
const RelayProcs = 1

// SetRelayProcs sets RelayProcs, unless GOMAXPROCS in the environment says
// otherwise. Call it early in a relay's main, before it serves.
func SetRelayProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(RelayProcs)
	}
}
