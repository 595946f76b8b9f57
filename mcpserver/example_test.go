package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

func TestMain(m *testing.M) {
	// This test binary is also the built-in executor's plugin process.
	builtins.ServeIfAsked()
	os.Exit(m.Run())
}

// A Go agent host adds dsh-host's tools to its own MCP server: a runtime
// over an executor (here the built-in bash-local, served from this very
// binary: builtins.ServeIfAsked first thing in main), then its tools on
// the server beside the program's own. A client, in memory here, calls
// them as any MCP client would over stdio or HTTP.
func Example() {
	ctx := context.Background()
	ex, err := host.BuiltinExecutor("bash-local")
	if err != nil {
		panic(err)
	}
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: host.Options{Executor: ex}})
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx)

	server := mcp.NewServer(&mcp.Implementation{Name: "my-agent-host", Version: "1.0.0"}, nil)
	// ... the program's own tools, then dsh-host's:
	tools, err := mcpserver.New(ctx, r, mcpserver.Options{})
	if err != nil {
		panic(err)
	}
	tools.Register(server)
	stop := tools.SendNotices(ctx, server)
	defer stop()

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverEnd, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "a-client", Version: "1.0.0"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hello from bash; exit 3"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// hello from bash
	// [exit code: 3]
}
