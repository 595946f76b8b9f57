package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A long foreground call made with a progress token hears progress
// notifications carrying the command's latest output; one without a token
// hears none.
func TestMCPProgressCarriesLatestOutput(t *testing.T) {
	var mu sync.Mutex
	var messages []string
	c := mcpClient{options: mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			messages = append(messages, req.Params.Message)
			mu.Unlock()
		},
	}}
	cs, _ := mcpClientSession(t, scenario(t), c)
	command := "for i in 1 2 3; do echo line$i; sleep 0.8; done"
	if text, _ := call(t, cs, "bash", map[string]any{"command": command}); text != "line1\nline2\nline3" {
		t.Fatalf("without a token: %q", text)
	}
	mu.Lock()
	if len(messages) != 0 {
		t.Errorf("progress without a token: %q", messages)
	}
	mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": command}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	atResult := len(messages)
	mu.Unlock()
	time.Sleep(1500 * time.Millisecond) // longer than the progress period
	mu.Lock()
	defer mu.Unlock()
	if len(messages) != atResult {
		t.Errorf("progress after the result: %q", messages[atResult:])
	}
	if len(messages) == 0 {
		t.Fatal("no progress for a call of more than two seconds")
	}
	var sawLine bool
	for _, m := range messages {
		if !strings.HasPrefix(m, "running for ") {
			t.Errorf("progress message %q", m)
		}
		sawLine = sawLine || strings.Contains(m, "latest output:\nline")
	}
	if !sawLine {
		t.Errorf("no progress message carried output: %q", messages)
	}
}

// A background job's completion reaches the client as a log message, and
// again at the head of the next tool result.
func TestMCPCompletionNoticeIsLogged(t *testing.T) {
	logged := make(chan *mcp.LoggingMessageParams, 8)
	c := mcpClient{options: mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logged <- req.Params },
	}}
	for _, protocol := range []string{"", legacyProtocol} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			c.protocol = protocol
			cs, _ := mcpClientSession(t, scenario(t), c)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			//lint:ignore SA1019 the log level is how a client before 2026-07-28 asks for log messages.
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
				t.Fatal(err)
			}
			text, _ := call(t, cs, "bash", map[string]any{"command": "exit 7", "run_in_background": true})
			if !strings.Contains(text, "job-1") {
				t.Fatalf("start: %q", text)
			}
			select {
			case p := <-logged:
				data, _ := p.Data.(map[string]any)
				if p.Level != "notice" || data["job_id"] != "job-1" || data["exit_code"] != float64(7) ||
					data["message"] != "background job job-1 exited with code 7" {
					t.Errorf("log message %+v", p)
				}
			case <-ctx.Done():
				t.Fatal("no log message for the finished job")
			}
			if text, _ := call(t, cs, "jobs", nil); !strings.HasPrefix(text, "[background job job-1 exited with code 7]\n") {
				t.Errorf("the next result does not lead with the notice: %q", text)
			}
		})
	}
}
