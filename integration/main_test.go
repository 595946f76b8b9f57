package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// bins are the binaries TestMain builds, all in one temporary directory.
var bins struct {
	dir    string // symlinks resolved, so /proc/PID/exe can be compared to it
	host   string // dsh-host
	plugin string // the standalone bash-local plugin
	// hung answers the handshake, then no call (testdata/hung-plugin);
	// outside dir, which is some tests' plugin directory.
	hung string
	// deaf can be made to close its sockets (testdata/deaf-plugin).
	deaf string
	// embed launches its own built-in bash-local (testdata/embed).
	embed string
	// agent is dsh-agent, built static as it ships.
	agent string
	// sandbox, container and ssh are the standalone plugins of those
	// executors, as make build lays them out beside bash-local's.
	sandbox, container, ssh string
}

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := pluginapitest.BuildDir("dsh-integration")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins.dir, err = filepath.EvalSymlinks(dir); err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	bins.host = filepath.Join(bins.dir, "dsh-host")
	bins.plugin = filepath.Join(bins.dir, "dsh-executor-bash-local")
	bins.hung = filepath.Join(bins.dir, "fixtures", "hung-plugin")
	bins.deaf = filepath.Join(bins.dir, "fixtures", "deaf-plugin")
	bins.embed = filepath.Join(bins.dir, "fixtures", "embed")
	bins.agent = filepath.Join(bins.dir, "dsh-agent")
	bins.sandbox = filepath.Join(bins.dir, "dsh-executor-bash-sandbox")
	bins.container = filepath.Join(bins.dir, "dsh-executor-container")
	bins.ssh = filepath.Join(bins.dir, "dsh-executor-ssh")
	for out, pkg := range map[string]string{
		bins.host:      "github.com/dsh-host/dsh-host/cmd/dsh-host",
		bins.plugin:    "github.com/dsh-host/dsh-host/plugins/bash-local/cmd/dsh-executor-bash-local",
		bins.hung:      "github.com/dsh-host/dsh-host/integration/testdata/hung-plugin",
		bins.deaf:      "github.com/dsh-host/dsh-host/integration/testdata/deaf-plugin",
		bins.embed:     "github.com/dsh-host/dsh-host/integration/testdata/embed",
		bins.agent:     "github.com/dsh-host/dsh-host/cmd/dsh-agent",
		bins.sandbox:   "github.com/dsh-host/dsh-host/plugins/bash-sandbox/cmd/dsh-executor-bash-sandbox",
		bins.container: "github.com/dsh-host/dsh-host/plugins/container/cmd/dsh-executor-container",
		bins.ssh:       "github.com/dsh-host/dsh-host/plugins/ssh/cmd/dsh-executor-ssh",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if out == bins.agent {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: go build %s: %v\n", pkg, err)
			return 1
		}
	}
	return m.Run()
}
