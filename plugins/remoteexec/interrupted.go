package remoteexec

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/internal/liveoutput"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// A foreground command whose session ends under it (the connection
// dropped, the container died) settles with a result that says so
// (RunResult.Interrupted), not with an error: it did start, and the agent
// there kills what it ran when its stream closes. The result holds the
// output that arrived before, when the caller watched it live.

// settleLost turns the error of a run on s into an interrupted result when
// s ended under it; any other error is returned as it is.
func settleLost(ctx context.Context, s *session, err error, began time.Time, timeoutMs int64, p *liveoutput.Partial) (pluginapi.RunResult, error) {
	if !errors.Is(err, pluginapi.ErrPluginUnavailable) || ctx.Err() != nil {
		return pluginapi.RunResult{}, where(s, err)
	}
	select {
	case <-s.client.Done():
	default:
		return pluginapi.RunResult{}, where(s, err)
	}
	why := err
	if s.Lost != nil {
		if lost := s.Lost(); lost != nil {
			why = lost
		}
	}
	return pluginapi.RunResult{
		TimeoutMs: timeoutMs, Stdout: p.Output(pluginapi.Stdout), Stderr: p.Output(pluginapi.Stderr),
		DurationMs:  time.Since(began).Milliseconds(),
		Interrupted: fmt.Sprintf("the session with %s ended under the command (%v); the agent there kills what it ran", s.Where, why),
	}, nil
}
