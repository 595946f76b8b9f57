package pluginapitest

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Launch starts the executor plugin that cmd runs (a binary whose main
// calls pluginapi.Serve) as a host would: go-plugin, gRPC only, AutoMTLS.
// It returns the plugin's executor. When the test ends it stops the plugin
// (go-plugin's Kill: a graceful shutdown, then SIGKILL) and fails the test
// if the plugin process outlived that. It is the factory of a Remote run:
//
//	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
//		return pluginapitest.Launch(t, exec.Command(bin))
//	}, pluginapitest.Options{Remote: true})
func Launch(t testing.TB, cmd *exec.Cmd) pluginapi.ShellExecutor {
	t.Helper()
	x, _ := LaunchPID(t, cmd)
	return x
}

// LaunchPID is Launch, and also says the plugin's process id: for a test
// that kills the plugin itself.
func LaunchPID(t testing.TB, cmd *exec.Cmd) (pluginapi.ShellExecutor, int) {
	t.Helper()
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: pluginapi.PluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     30 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Name: "plugin", Output: os.Stderr, Level: hclog.Warn}),
	})
	var pid int
	t.Cleanup(func() {
		client.Kill()
		if pid == 0 {
			return
		}
		live, _ := hostPIDs(procRef{pid: pid}) // in this namespace: nothing to list, no error
		if left := killAll(live); len(left) > 0 {
			t.Errorf("the plugin process %v outlived go-plugin's Kill; the suite killed it", left)
		}
	})
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("starting the plugin %s: %v", cmd.Path, err)
	}
	if rc := client.ReattachConfig(); rc != nil {
		pid = rc.Pid
	}
	raw, err := rpc.Dispense(pluginapi.PluginName)
	if err != nil {
		t.Fatalf("dispensing %q from %s: %v", pluginapi.PluginName, cmd.Path, err)
	}
	x, ok := raw.(pluginapi.ShellExecutor)
	if !ok {
		t.Fatalf("plugin %q of %s is a %T, not a pluginapi.ShellExecutor", pluginapi.PluginName, cmd.Path, raw)
	}
	return x, pid
}
