package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dsh-host/dsh-host/internal/procstat"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// The connection to a plugin is mutual TLS with the keys the host made for
// it: a client with other keys, or none, is refused, and the plugin then
// exits with nothing served; the right keys are answered.
func TestPluginConnectionIsMutualTLS(t *testing.T) {
	t.Parallel() // among the slowest: they overlap, after the others
	bin := filepath.Join(t.TempDir(), "dsh-executor-bash-local")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dsh-host/dsh-host/plugins/bash-local/cmd/dsh-executor-bash-local").CombinedOutput(); err != nil {
		t.Fatalf("building the plugin: %v\n%s", err, out)
	}
	mine, err := pluginapi.NewConnectionKeys()
	if err != nil {
		t.Fatal(err)
	}
	other, err := pluginapi.NewConnectionKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		client *plugin.ClientConfig
		ok     bool
	}{
		{"the host's keys", &plugin.ClientConfig{TLSConfig: mine.Host}, true},
		{"another host's keys", &plugin.ClientConfig{TLSConfig: other.Host}, false},
		{"no TLS", &plugin.ClientConfig{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keysR, keysW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			_, _ = keysW.Write(mine.Payload)
			keysW.Close()
			cmd := exec.Command(bin)
			cmd.Env = []string{plugin.EnvUnixSocketDir + "=" + t.TempDir(), pluginapi.TLSFDVar + "=3"}
			cmd.ExtraFiles = []*os.File{keysR}
			cfg := tc.client
			cfg.HandshakeConfig = pluginapi.Handshake
			cfg.VersionedPlugins = pluginapi.PluginSets()
			cfg.Cmd = cmd
			cfg.AllowedProtocols = []plugin.Protocol{plugin.ProtocolGRPC}
			cfg.StartTimeout = 10 * time.Second
			cfg.Logger = hclog.NewNullLogger()
			client := plugin.NewClient(cfg)
			defer client.Kill()
			rpc, err := client.Client()
			keysR.Close()
			if err == nil {
				var raw any
				if raw, err = rpc.Dispense(pluginapi.PluginName); err == nil {
					_, err = raw.(pluginapi.ShellExecutor).Describe(t.Context())
				}
			}
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && err == nil:
				t.Errorf("a client with %s was answered", tc.name)
			}
			client.Kill()
			if p := cmd.Process; p != nil && procstat.Alive(p.Pid) {
				t.Errorf("the plugin %d outlived its client", p.Pid)
			}
		})
	}
}
