package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
)

// A bash call whose timeout is above the executor's maximum runs with the
// maximum, and the result a client reads says so; one within it says
// nothing.
func TestATimeoutAboveTheMaximumIsSaidInTheResult(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ex, err := host.BuiltinExecutor("bash-local")
	if err != nil {
		t.Fatal(err)
	}
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: host.Options{Executor: ex}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	tools, err := mcpserver.New(ctx, r, mcpserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	tools.Register(server)
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		timeout int64
		want    string
	}{
		{900000, "hi\n[timeout 900000 ms is above the maximum 600000 ms; ran with 600000 ms]"},
		{600000, "hi"},
		{5000, "hi"},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi", "timeout": tc.timeout}})
		if err != nil {
			t.Fatal(err)
		}
		var text strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		if res.IsError || text.String() != tc.want {
			t.Errorf("bash with timeout %d: %q (error %v), want %q", tc.timeout, text.String(), res.IsError, tc.want)
		}
	}
}
