// Command dsh-executor-container serves the container executor as a
// go-plugin binary: commands run in a container, through the Docker Engine
// API (Docker or Podman's service). A dsh-host launches it; run by hand it
// explains that and exits.
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/container"
)

func main() {
	pluginapi.Serve(container.New())
}
