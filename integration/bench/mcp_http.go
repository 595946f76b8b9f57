package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpHTTP measures `dsh-host mcp --http`: a warm `bash` call of `true`
// over HTTP against the same call over stdio (interleaved, in the same
// run), and the throughput of 50 concurrent sessions making 20 calls each,
// none of which may fail.
func mcpHTTP(ctx context.Context, bin string, n, warmup int) (figs []figure, err error) {
	stdio, err := mcp.NewClient(&mcp.Implementation{Name: "dsh-bench", Version: "0.1.0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp")}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to dsh-host mcp: %w", err)
	}
	defer stdio.Close()
	url, stop, err := startHTTP(bin)
	if err != nil {
		return nil, err
	}
	defer stop()
	overHTTP, err := httpClientSession(ctx, url)
	if err != nil {
		return nil, err
	}
	defer overHTTP.Close()
	times, err := interleave(n, warmup, func() error { return bashTrue(ctx, overHTTP) }, func() error { return bashTrue(ctx, stdio) })
	if err != nil {
		return nil, err
	}
	figs = append(figs, figure{"mcp_http_vs_stdio_bash_true_ratio", median(times[0]) / median(times[1]), "x", "<=", 1.5},
		figure{"mcp_http_bash_true_median", median(times[0]), "ms", ">=", 0})

	const sessions, calls = 50, 20
	var failed atomic.Int64
	var wg sync.WaitGroup
	began := time.Now()
	for range sessions {
		wg.Go(func() {
			cs, err := httpClientSession(ctx, url)
			if err != nil {
				failed.Add(calls)
				return
			}
			defer cs.Close()
			for range calls {
				if bashTrue(ctx, cs) != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(began).Seconds()
	return append(figs,
		figure{"mcp_http_50_sessions_x_20_calls_per_s", sessions * calls / took, "calls/s", ">=", 0},
		figure{"mcp_http_50_sessions_x_20_calls_failed", float64(failed.Load()), "calls", "<=", 0},
	), nil
}

// bashTrue calls bash with `true` and checks its empty result.
func bashTrue(ctx context.Context, cs *mcp.ClientSession) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}})
	if err != nil {
		return err
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("bash true failed: %+v", res)
	}
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || text.Text != "" {
		return fmt.Errorf("bash true gave %#v, not empty text", res.Content[0])
	}
	return nil
}

// startHTTP starts `dsh-host mcp --http 127.0.0.1:0` and returns its URL,
// and what stops it (SIGTERM, then a wait).
func startHTTP(bin string) (string, func(), error) {
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := regexp.MustCompile(`url=(http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case url := <-found:
		return url, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("dsh-host mcp --http named no URL within 30s")
	}
}

// httpClientSession connects a client to url, with a transport of its own
// (its own connections, as a separate client would have).
func httpClientSession(ctx context.Context, url string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-bench", Version: "0.1.0"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &http.Transport{}}}, nil)
}
