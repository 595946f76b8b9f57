// Command dsh-executor-kubernetes serves the Kubernetes executor as a
// go-plugin binary: commands run in a pod, through the cluster's API. A
// dsh-host launches it; run by hand it explains that and exits.
package main

import (
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

func main() {
	pluginapi.Serve(kubernetes.New())
}
