// Command embed is a Go program that launches dsh-host's built-in
// bash-local executor from its own binary, as an agent host embedding
// dsh-host would: the integration tests build it, with the one-line
// dispatch at the top of main and (EMBED_NO_DISPATCH=1) without.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/builtins"
)

func main() {
	if os.Getenv("EMBED_NO_DISPATCH") != "1" {
		builtins.ServeIfAsked()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex, err := host.BuiltinExecutor("bash-local")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h, err := host.Launch(ctx, host.Options{Executor: ex})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer h.Close(ctx)
	res, err := pluginapi.RunRequest(ctx, h.Shell(), pluginapi.ExecRequest{Command: "echo embedded"}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Print(res.Stdout.Text)
}
