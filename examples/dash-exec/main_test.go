package main

import (
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// The executor keeps the contract: every case of the suite, over a real
// gRPC connection.
func TestConformance(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return newExecutor() })
}
