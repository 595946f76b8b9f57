// Command hung-plugin is a test fixture, not an executor to use: it
// completes go-plugin's handshake like any executor, then never answers a
// call, as a plugin wedged in a deadlock would.
package main

import (
	"context"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

type hung struct{ pluginapi.ShellExecutor }

func (hung) Describe(ctx context.Context) (pluginapi.Description, error) {
	select {} // never
}

func main() {
	localexec.ClaimAllChildren()
	pluginapi.Serve(hung{bashlocal.New()})
}
