package pluginapi_test

import (
	"runtime/debug"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// SetOutputGC sets OutputGCPercent, and leaves a GOGC the environment
// gives alone.
func TestSetOutputGCYieldsToGOGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)

	t.Setenv("GOGC", "")
	pluginapi.SetOutputGC()
	if got := debug.SetGCPercent(100); got != pluginapi.OutputGCPercent {
		t.Errorf("with no GOGC, SetOutputGC set %d, want %d", got, pluginapi.OutputGCPercent)
	}
	t.Setenv("GOGC", "50")
	pluginapi.SetOutputGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=50, SetOutputGC changed the collector's target to %d", got)
	}
}
