package localexec

import (
	"os"
	"testing"
)

// The sweep of a PID namespace is refused to a process that is neither
// its init nor the init's child (this test's process, on a machine or in
// CI): everything else there may be another's.
func TestSweepPIDNamespaceIsRefusedOutsideAContainer(t *testing.T) {
	if os.Getpid() == 1 || os.Getppid() == 1 {
		t.Skip("this test runs as an init's child: a container's main process")
	}
	if err := SweepPIDNamespace(); err == nil {
		children.sweep.Store(false)
		t.Fatal("SweepPIDNamespace accepted a process that is not an init's child")
	}
	if children.sweep.Load() {
		t.Error("a refused SweepPIDNamespace turned the sweep on")
	}
}
