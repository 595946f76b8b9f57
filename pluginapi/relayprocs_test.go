package pluginapi_test

import (
	"runtime"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// SetRelayProcs sets RelayProcs, and leaves a GOMAXPROCS the environment
// gives alone.
func TestSetRelayProcsYieldsToGOMAXPROCS(t *testing.T) {
	orig := runtime.GOMAXPROCS(2)
	defer runtime.GOMAXPROCS(orig)

	t.Setenv("GOMAXPROCS", "")
	pluginapi.SetRelayProcs()
	if got := runtime.GOMAXPROCS(0); got != pluginapi.RelayProcs {
		t.Errorf("with no GOMAXPROCS, SetRelayProcs set %d, want %d", got, pluginapi.RelayProcs)
	}
	runtime.GOMAXPROCS(2)
	t.Setenv("GOMAXPROCS", "2")
	pluginapi.SetRelayProcs()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("with GOMAXPROCS=2, SetRelayProcs changed it to %d", got)
	}
}
