package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/internal/liveoutput"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// pluginExitWait bounds how long a run that lost its plugin's stream waits
// to see the plugin's process gone.
const pluginExitWait = 5 * time.Second

// RunRequest resolves and runs req on the host's executor, as
// pluginapi.RunRequest does, passing the output to onOutput as it comes. A
// run whose plugin dies under it settles with a result that says so
// (RunResult.Interrupted), not with an error: the command may well have
// run, and how it ended is unknown. The result holds the output onOutput
// saw (none when onOutput is nil), and what the plugin left running is
// killed first. A plugin gone before the call is an error, as before.
func (h *Host) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	pid := h.PluginPID()
	if pid == 0 {
		return pluginapi.RunRequest(ctx, h.shell, req, onOutput)
	}
	began, seen := time.Now(), liveoutput.New(req.StdoutMaxBytes, req.StderrMaxBytes)
	res, err := pluginapi.RunRequest(ctx, h.shell, req, seen.Watch(onOutput))
	if err == nil || !errors.Is(err, pluginapi.ErrPluginUnavailable) || !h.exitedWithin(pluginExitWait) {
		return res, err
	}
	left := "nothing it started was left running"
	switch n := h.KillLeftovers(); {
	case n == 1:
		left = "the one process it left running is killed"
	case n > 1:
		left = fmt.Sprintf("the %d processes it left running are killed", n)
	}
	return pluginapi.RunResult{
		TimeoutMs: req.TimeoutMs, Stdout: seen.Output(pluginapi.Stdout), Stderr: seen.Output(pluginapi.Stderr),
		DurationMs:  time.Since(began).Milliseconds(),
		Interrupted: fmt.Sprintf("the plugin of executor %s (pid %d) exited under the command; %s", h.desc.Name, pid, left),
	}, nil
}

// exitedWithin reports whether the plugin's process has exited, or exits
// within d.
func (h *Host) exitedWithin(d time.Duration) bool {
	for deadline := time.Now().Add(d); !h.Exited(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}
