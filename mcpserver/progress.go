package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// A foreground call that asked for progress hears every progressPeriod how
// long its command has run and the last progressLines lines it wrote.
const (
	progressPeriod = time.Second
	progressLines  = 5
)

// reportProgress sends progress notifications for token until the returned
// function is called; that function returns once the last one is out, so no
// notification follows the call's result.
func reportProgress(ctx context.Context, ss *mcp.ServerSession, token any, recent *host.RecentLines) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		began := time.Now()
		tick := time.NewTicker(progressPeriod)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			elapsed := time.Since(began)
			_ = ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      elapsed.Seconds(),
				Message:       progressMessage(elapsed, recent),
			})
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// progressMessage says how long the command has run, then its last lines.
func progressMessage(elapsed time.Duration, recent *host.RecentLines) string {
	head := fmt.Sprintf("running for %s", elapsed.Round(time.Second))
	lines, _ := recent.Lines()
	if len(lines) == 0 {
		return head + ", no output yet"
	}
	return head + "; latest output:\n" + strings.Join(lines, "\n")
}
