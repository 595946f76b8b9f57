package pluginapitest

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Launch starts the executor plugin that cmd runs (a binary whose main
// calls pluginapi.Serve) as dsh-host does: go-plugin, gRPC only, the same
// handshake, and mutual TLS with keys made here for both ends and handed to
// the plugin on an inherited pipe (pluginapi.ConnectionKeys), not
// go-plugin's AutoMTLS; a launch that fails says why as dsh-host does
// (pluginapi.ExplainLaunchError).
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
	// go-plugin puts the plugin's socket in os.TempDir unless told where;
	// a plugin that is killed (as a test that kills it does) leaves it
	// there. A directory of the test's own, removed at the end, keeps
	// nothing behind (not t.TempDir: a socket's path is short). It is
	// writable by all, as os.TempDir is, for a plugin run as another user.
	// A caller that names a directory keeps it.
	if !slices.ContainsFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, plugin.EnvUnixSocketDir+"=") }) {
		sockDir, err := os.MkdirTemp("", "dsh-test-sock-")
		if err == nil {
			err = os.Chmod(sockDir, 0o1777)
		}
		if err != nil {
			t.Fatalf("a socket directory for the plugin: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockDir) // go-plugin adds this process's environment
	}
	keys, err := pluginapi.NewConnectionKeys()
	var keysHanded func()
	if err == nil {
		keysHanded, err = keys.Hand(cmd)
	}
	if err != nil {
		t.Fatalf("the keys of the plugin's connection: %v", err)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: pluginapi.PluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        keys.Host,
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
	keysHanded()
	if err != nil {
		t.Fatalf("starting the plugin %s: %v", cmd.Path, pluginapi.ExplainLaunchError(err))
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
