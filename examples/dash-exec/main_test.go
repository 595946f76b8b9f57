package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// The executor keeps the contract: every case of the suite, over a real
// gRPC connection.
func TestConformance(t *testing.T) {
	pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return newExecutor() })
}

// The binary keeps it too: every case over a plugin process of its own,
// launched as a host launches it and stopped when the case ends.
func TestConformanceOverThePlugin(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dsh-executor-dash")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
		return pluginapitest.Launch(t, exec.Command(bin))
	}, pluginapitest.Options{Remote: true})
}
