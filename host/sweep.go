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

// sweepOrphansOnce sweeps the temporary directory, once per process: a
// directory listing and a /proc read per host directory found.
func sweepOrphansOnce() {
	sweepOnce.Do(func() { ownedtemp.Sweep(tempPrefixes...) })
}
