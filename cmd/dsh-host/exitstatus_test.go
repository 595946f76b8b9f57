package main

import (
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A run whose ending is unknown exits 255, whoever lost it (the plugin,
// the connection, the sandbox): never 125, which says that nothing ran.
func TestExitStatusOfARunWhoseEndingIsUnknown(t *testing.T) {
	three := 3
	for _, c := range []struct {
		name string
		res  pluginapi.RunResult
		want int
	}{
		{"exited", pluginapi.RunResult{ExitCode: &three}, 3},
		{"killed", pluginapi.RunResult{Signal: "SIGKILL"}, 137},
		{"timed out", pluginapi.RunResult{TimedOut: true, Signal: "SIGKILL"}, exitTimedOut},
		{"lost by the executor", pluginapi.RunResult{Interrupted: "the session with a@b ended under the command"}, exitInterrupted},
		{"lost by the sandbox", pluginapi.RunResult{Sandbox: &pluginapi.SandboxFacts{Interrupted: "the spawner died"}}, exitInterrupted},
		{"no ending at all", pluginapi.RunResult{}, exitCannot},
	} {
		if got := exitStatus(c.res); got != c.want {
			t.Errorf("%s: exit status %d, want %d", c.name, got, c.want)
		}
	}
}
