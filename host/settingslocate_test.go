package host_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// An owner's refusal of a section lands at the line of the first key it
// names, as a whole word, the longest path at one place; else at the
// section's line. It stays wrapped.
func TestSettingsLocate(t *testing.T) {
	path := writeSettings(t, "shell:\n  defaultTimeoutMs: 9000\n  maxTimeoutMs: 5000\nsandbox:\n  limits:\n    memoryMiB: -1\n  network: false\n")
	f, err := host.LoadSettingsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		section, msg, want string
	}{
		{"shell", "maxTimeoutMs 5000 is below defaultTimeoutMs 9000", ":3: shell.maxTimeoutMs: "},
		{"shell", "defaultTimeoutMs 9000 exceeds maxTimeoutMs 5000", ":2: shell.defaultTimeoutMs: "},
		{"shell", "xmaxTimeoutMs and nothing else", ":1: shell: "},
		{"sandbox", "sandboxPolicy.limits.memoryMiB -1 is negative", ":6: sandbox.limits.memoryMiB: "},
		{"sandbox", "network off", ":7: sandbox.network: "},
	} {
		err := f.Locate(c.section, fmt.Errorf("%w: %s", pluginapi.ErrInvalidSettings, c.msg))
		if want := "host: settings: " + path + c.want + "pluginapi: invalid settings: " + c.msg; err.Error() != want {
			t.Errorf("Locate(%s, %q) = %q, want %q", c.section, c.msg, err, want)
		}
		if !errors.Is(err, host.ErrSettings) || !errors.Is(err, pluginapi.ErrInvalidSettings) {
			t.Errorf("Locate(%s, %q) does not wrap both errors", c.section, c.msg)
		}
	}
	if err := f.Locate("approval", errors.New("x")); err.Error() != "x" {
		t.Errorf("a section the file lacks: %q, want the error as it is", err)
	}
}
