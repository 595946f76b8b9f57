package host

import (
	"sync"

	"github.com/dsh-host/dsh-host/internal/ownedtemp"
)

// tempPrefixes begin the names of the host's temporary directories (its
// plugin's socket, its spill files); internal/ownedtemp names them for the
// process that made them, so that the next host to start removes what a
// SIGKILLed one left.
var tempPrefixes = []string{"dsh-host-", "dsh-spill-"}

var sweepOnce sync.Once

// sweepOrphansAside sweeps the temporary directory, once per process (a
// directory listing and a /proc read per host directory found), beside
// what the caller does next; the function it returns waits for the sweep.
// A directory still being made has no OwnerFile yet, and the sweep leaves
// it.
func sweepOrphansAside() (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		sweepOnce.Do(func() { ownedtemp.Sweep(tempPrefixes...) })
	}()
	return func() { <-done }
}
