package bashsandbox_test

import (
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// bash-sandbox keeps the contract: confined, every semantic of the suite
// holds as it does for bash-local.
func TestConformance(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor {
		x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
		if err != nil {
			t.Fatal(err)
		}
		return x
	})
}
