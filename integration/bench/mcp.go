package main

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// mcpLatency is the median latency of a `bash` tool call of `true` through
// `dsh-host mcp` (one warm client session over stdio) against the warm
// in-process host path of the same command, and against the cold CLI,
// `dsh-host run -- true`, one process per command.
func mcpLatency(ctx context.Context, shell pluginapi.ShellExecutor, bin string, n, warmup int) (figs []figure, err error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-bench", Version: "0.1.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin, "mcp")}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to dsh-host mcp: %w", err)
	}
	defer func() {
		if cerr := session.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the MCP session: %w", cerr)
		}
	}()
	viaMCP := func() error {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}})
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 1 {
			return fmt.Errorf("bash true through MCP failed: %+v", res)
		}
		if text, ok := res.Content[0].(*mcp.TextContent); !ok || text.Text != "" {
			return fmt.Errorf("bash true through MCP gave %#v, not empty text", res.Content[0])
		}
		return nil
	}
	warm, err := interleave(n, warmup, viaMCP, func() error { return runTrue(ctx, shell) })
	if err != nil {
		return nil, err
	}
	cold, err := interleave(20, 3, viaMCP, func() error { return exec.Command(bin, "run", "--", "true").Run() })
	if err != nil {
		return nil, err
	}
	call := median(warm[0])
	return []figure{
		{"mcp_bash_true_vs_host_run_ratio", call / median(warm[1]), "x", "<=", 1.25},
		{"mcp_bash_true_vs_cli_run_ratio", median(cold[0]) / median(cold[1]), "x", ">=", 0},
		{"mcp_bash_true_median", call, "ms", ">=", 0},
	}, nil
}
