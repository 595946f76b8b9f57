// Command dsh-executor-pwsh-local serves the pwsh-local executor as a
// go-plugin binary. A dsh-host launches it; run by hand it explains that
// and exits.
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	pwshlocal "github.com/dsh-host/dsh-host/plugins/pwsh-local"
)

func main() {
	localexec.ClaimAllChildren() // the executor is alone in this process
	pluginapi.Serve(pwshlocal.New())
}
