// Command mcp-embed is an agent host of its own that embeds dsh-host: it
// serves the bash tool and the job tools over MCP on stdio, mounting the
// executor the way dsh-host does (names, plugin directory, checksum pins
// and the settings file, from $DSH_SETTINGS and $DSH_PLUGIN_DIR).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

func main() {
	builtins.ServeIfAsked() // this binary is also the built-in executors' plugin process
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-embed:", host.ErrorText(err))
		os.Exit(1)
	}
}

// serve mounts the executor named by args (none: bash-local) and serves MCP
// on stdio until the client leaves or ctx is done.
func serve(ctx context.Context, args []string) error {
	setup := host.Setup{Executors: args, DefaultExecutor: "bash-local", Builtins: builtins.Names()}
	r, resolved, err := setup.StartRuntime(ctx)
	if err != nil {
		return err
	}
	defer r.Close(context.WithoutCancel(ctx))
	policy, err := resolved.ApprovalPolicy()
	if err != nil {
		return err
	}
	tools, err := mcpserver.New(ctx, r, mcpserver.Options{Policy: policy})
	if err != nil {
		return err
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "mcp-embed", Version: "0.1.0"}, nil)
	tools.Register(server)
	defer tools.SendNotices(ctx, server)()
	return server.Run(ctx, &mcp.StdioTransport{})
}
