package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// maxQueuedNotices bounds the completion notices waiting to go out as log
// messages; past it they are dropped from the log (the next tool result
// still carries them).
const maxQueuedNotices = 256

// maxSessionNotices bounds the log messages waiting for one session; past
// it they are dropped for that session (its next tool result still
// carries them).
const maxSessionNotices = 64

// SendNotices sends each completion notice of a job as an MCP log message
// (level notice, logger "dsh-host/jobs") to the sessions that own it and
// set a log level, until the returned function is called. Each session
// has a sender of its own: a message is written into the session's
// stream, and a client that stops reading holds up only its own.
func (t *Tools) SendNotices(ctx context.Context, server *mcp.Server) (stop func()) {
	logger := t.logger
	queue := make(chan host.Notice, maxQueuedNotices)
	unsubscribe := t.jobs.Subscribe(func(n host.Notice) {
		select {
		case queue <- n:
		default:
			logger.Warn("too many completion notices queued; one is left out of the log", "job", n.Job.ID)
		}
	})
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// Each session's sender: its queue, and quit, closed once the session
	// is gone. Only the dispatching goroutine below touches the map.
	type sessionSender struct {
		queue chan *mcp.LoggingMessageParams
		quit  chan struct{}
	}
	senders := map[*mcp.ServerSession]sessionSender{}
	sender := func(ss *mcp.ServerSession) sessionSender {
		if s, ok := senders[ss]; ok {
			return s
		}
		s := sessionSender{queue: make(chan *mcp.LoggingMessageParams, maxSessionNotices), quit: make(chan struct{})}
		senders[ss] = s
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-s.quit:
					return
				case msg := <-s.queue:
					//lint:ignore SA1019 log notifications are what clients before 2026-07-28 read.
					if err := ss.Log(ctx, msg); err != nil {
						logger.Debug("sending a completion notice", "error", err)
					}
				}
			}
		})
		return s
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-queue:
				msg := &mcp.LoggingMessageParams{
					Level:  "notice",
					Logger: "dsh-host/jobs",
					Data:   noticeData(n.Job),
				}
				live := map[*mcp.ServerSession]bool{}
				for ss := range server.Sessions() {
					live[ss] = true
					if t.owner(ss) != n.Job.Owner {
						continue
					}
					select {
					case sender(ss).queue <- msg:
					default:
						logger.Warn("a session does not take its completion notices; one is left out of its log", "job", n.Job.ID)
					}
				}
				for ss, s := range senders {
					if !live[ss] {
						close(s.quit)
						delete(senders, ss)
					}
				}
			}
		}
	})
	return func() {
		unsubscribe()
		cancel()
		wg.Wait()
	}
}

// noticeData is a completion notice as structured log data.
func noticeData(j host.JobInfo) map[string]any {
	d := map[string]any{
		"job_id":  string(j.ID),
		"state":   j.State.String(),
		"command": j.Command,
		"message": "background job " + string(j.ID) + " " + describeEnd(j),
	}
	if j.Exit.ExitCode != nil {
		d["exit_code"] = *j.Exit.ExitCode
	}
	if j.Exit.Signal != "" {
		d["signal"] = j.Exit.Signal
	}
	return d
}
