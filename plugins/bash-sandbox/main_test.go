package bashsandbox_test

import (
	"os"
	"testing"

	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// TestMain is also the spawner: bash-sandbox starts its spawners by running
// this binary again.
func TestMain(m *testing.M) {
	if confine.IsHelper() {
		os.Exit(confine.HelperMain())
	}
	localexec.ClaimAllChildren()
	os.Exit(m.Run())
}
