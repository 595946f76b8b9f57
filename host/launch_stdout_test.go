package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/host"
)

// A plugin that writes to stdout before its handshake is refused, saying
// so, not with go-plugin's guess that it was not compiled for this
// architecture.
func TestLaunchSaysAPluginWroteToStdoutBeforeServe(t *testing.T) {
	noisy := filepath.Join(t.TempDir(), "dsh-executor-noisy")
	script := "#!/bin/sh\necho 'banner: starting up'\nexec " + pluginBin + "\n"
	if err := os.WriteFile(noisy, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := host.Launch(t.Context(), host.Options{Executor: host.Executor{Name: "noisy", Path: noisy}})
	if err == nil {
		h.Close(t.Context())
		t.Fatal("a plugin that prints before its handshake was launched")
	}
	for _, want := range []string{`wrote "banner: starting up" to its stdout before its handshake`, "pluginapi.Serve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "architecture") {
		t.Errorf("still blames the architecture: %v", err)
	}
}
