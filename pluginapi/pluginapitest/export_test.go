package pluginapitest

import (
	"path/filepath"
	"testing"
)

// BlindHostProc points the suite's own /proc reading at a directory that
// does not exist, until t ends: what an Options.Elsewhere run checks, it
// must then check through its witness.
func BlindHostProc(t *testing.T) {
	saved := procDir
	procDir = filepath.Join(t.TempDir(), "no-proc")
	t.Cleanup(func() { procDir = saved })
}
