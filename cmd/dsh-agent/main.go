// Command dsh-agent serves the bash-local executor over its standard input
// and output: the agent that an executor whose commands run elsewhere (a
// container, another machine) starts there, and drives over that one
// stream. When the stream closes, its host is gone: it kills everything it
// started, and exits. It is built static (CGO_ENABLED=0), for linux/amd64
// and linux/arm64, so that it runs in any image.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// version is the agent's version, set at build time (-ldflags -X).
var version = "dev"

func main() { os.Exit(run()) }

func run() int {
	fs := flag.NewFlagSet("dsh-agent", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	stdio := fs.Bool("stdio", false, "serve the executor on stdin and stdout (the only mode)")
	dial := fs.String("dial", "", "also connect to the unix socket at this path and serve calls there too (a faster path than stdio, which stays the lifeline)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: dsh-agent --stdio [--dial SOCKET]\n\n"+
			"Serves the bash-local executor, over gRPC, on its stdin and stdout. An executor whose\n"+
			"commands run in a container or on another machine starts it there; it is not run by hand.\n"+
			"It exits, killing every command it started, when its stdin closes. With --dial it also\n"+
			"serves calls over a connection to SOCKET (the executor's, which checks who connects).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Println(version)
		return 0
	}
	if !*stdio || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	stream, err := takeStdio()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-agent: %v\n", err)
		return 1
	}
	localexec.ClaimAllChildren() // the executor is alone in this process
	pluginapi.SetOutputGC()      // output crosses it first
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	impl := bashlocal.New()
	if *dial != "" {
		serveSide(ctx, impl, *dial)
	}
	err = pluginapi.ServeStream(ctx, impl, stream)
	switch {
	case errors.Is(err, pluginapi.ErrStreamClosed) && !errors.Is(err, context.Canceled):
		return 0
	case err == context.Canceled && ctx.Err() != nil: // not joined with a Close error
		// SIGTERM, SIGINT or SIGHUP: asked to end, and ended; what it ran
		// is killed.
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "dsh-agent: %v\n", err)
		return 1
	}
	return 0
}

// serveSide connects to the executor's socket at path and serves impl over
// that connection too, until it ends or ctx is done. A failed connection
// is said on stderr (the executor's log) and leaves stdio alone to carry
// the calls: the executor, seeing no connection, uses it.
func serveSide(ctx context.Context, impl pluginapi.ShellExecutor, path string) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-agent: no side stream, calls cross stdio: %v\n", err)
		return
	}
	go func() { _ = pluginapi.ServeSideStream(ctx, impl, conn) }()
}
