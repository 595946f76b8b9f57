// Command dsh-executor-bash-sandbox serves the bash-sandbox executor as a
// go-plugin binary. Run again with a hidden first argument, it is the
// sandbox's confined spawner. A dsh-host launches it; run by hand it
// explains that and exits.
package main

import (
	"fmt"
	"os"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

func main() {
	if confine.IsHelper() {
		os.Exit(confine.HelperMain())
	}
	x, err := bashsandbox.New(bashsandbox.SandboxPolicy{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	localexec.ClaimAllChildren() // the executor is alone in this process
	pluginapi.Serve(x)
}
