// Command dsh-executor-bash-local serves the bash-local executor as a
// go-plugin binary, the way a third party ships an executor. A dsh-host
// launches it; run by hand it explains that and exits.
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

func main() {
	localexec.ClaimAllChildren() // the executor is alone in this process
	pluginapi.Serve(bashlocal.New())
}
