package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// build builds the example, and a plugin directory holding bash-local as a
// standalone plugin binary named extra; it returns the example, the
// directory and the plugin's SHA-256.
func build(t *testing.T) (bin, dir, sum string) {
	t.Helper()
	tmp := t.TempDir()
	bin, dir = filepath.Join(tmp, "mcp-embed"), filepath.Join(tmp, "plugins")
	plugin := filepath.Join(dir, "dsh-executor-extra")
	for _, b := range [][]string{{"-o", bin, "."}, {"-o", plugin, "github.com/dsh-host/dsh-host/plugins/bash-local/cmd/dsh-executor-bash-local"}} {
		if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", b, err, out)
		}
	}
	data, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return bin, dir, hex.EncodeToString(h[:])
}

// settings writes a settings file that pins extra to sum.
func settings(t *testing.T, dir, sum string) string {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	yaml := "host:\n  pluginDir: " + dir + "\n  checksums:\n    extra: " + sum + "\n"
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The example serves the bash tool over MCP from the built-in executor,
// and from a plugin it finds by name in the settings' plugin directory,
// pinned; a binary that is not the pinned one is refused before it runs.
func TestEmbeddedHost(t *testing.T) {
	bin, dir, sum := build(t)
	for _, tc := range []struct{ name, executor, pin string }{
		{"built-in", "", sum},
		{"pinned plugin", "extra", sum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command(bin)
			if tc.executor != "" {
				cmd.Args = append(cmd.Args, tc.executor)
			}
			cmd.Env = append(os.Environ(), "DSH_SETTINGS="+settings(t, dir, tc.pin))
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi; exit 3"}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(text, "hi\n") || !strings.Contains(text, "[exit code: 3]") {
				t.Errorf("bash: %q, want hi and exit code 3", text)
			}
		})
	}
	t.Run("wrong pin", func(t *testing.T) {
		cmd := exec.Command(bin, "extra")
		cmd.Env = append(os.Environ(), "DSH_SETTINGS="+settings(t, dir, strings.Repeat("0", 64)))
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "checksum mismatch") || !strings.Contains(string(out), sum) {
			t.Errorf("a plugin that is not the pinned one: %v, %q; want it refused, naming its hash", err, out)
		}
	})
}
