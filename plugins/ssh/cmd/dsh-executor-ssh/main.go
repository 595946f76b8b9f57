// Command dsh-executor-ssh serves the SSH executor as a go-plugin binary:
// commands run on another machine, over SSH. A dsh-host launches it; run
// by hand it explains that and exits.
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

func main() {
	pluginapi.Serve(ssh.New())
}
