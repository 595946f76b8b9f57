package pluginapi

import (
	"os"
	"runtime/debug"
)

// OutputGCPercent is the garbage collector's target (GOGC) for a process
// that moves commands' output in bulk: a host, an executor that forwards
// it from elsewhere. Every read of background output allocates up to a
// megabyte or two in each process it crosses (its text, decoded), and
// with Go's default (100, and a heap of 4 MiB before the first
// collection) the collector then runs at nearly every read; at 400 it
// runs at about every tenth. Background output through a container
// measured about a fifth faster; a process's heap may grow to five
// times what it holds live (twice, by default).
const OutputGCPercent = 400

// SetOutputGC sets OutputGCPercent, unless GOGC in the environment says
// otherwise. Call it first in main.
func SetOutputGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(OutputGCPercent)
	}
}
