// Command dsh-agent serves the bash-local executor over its standard input
// and output: the agent that an executor whose commands run elsewhere (a
// container, another machine) starts there, and drives over that one
// stream. When the stream closes, its host is gone: it kills everything it
// started, and exits. It is built static (CGO_ENABLED=0), for linux/amd64
// and linux/arm64, so that it runs in any image.
package main

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/internal/nameguard"
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
	dialToken := fs.String("dial-token", "", "the secret the socket's listener must send first (hex), before any call is served there")
	noSetID := fs.Bool("no-setid", false, "refuse set-uid and set-gid bits to everything the agent runs (a container's, whose mounts are another machine's directories)")
	sweep := fs.Bool("sweep-pids", false, "the agent is a container's main process, under its init: after each run or job, kill what no live run or job owns in the PID namespace")
	var guardRoots roots
	fs.Var(&guardRoots, "guard-root", "refuse, beneath this directory, what would make a new git repository (repeatable; a container's workspace and writable roots)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: dsh-agent --stdio [--dial SOCKET --dial-token HEX] [--no-setid] [--sweep-pids] [--guard-root DIR]...\n\n"+
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
	if err := notDumpable(); err != nil {
		fmt.Fprintf(os.Stderr, "dsh-agent: making itself not dumpable: %v\n", err)
		return 1
	}
	// Both before anything runs; each refuses rather than run without
	// what the executor asked for.
	if *noSetID {
		if err := refuseSetID(); err != nil {
			fmt.Fprintf(os.Stderr, "dsh-agent: --no-setid: %v\n", err)
			return 1
		}
	}
	if *sweep {
		if err := localexec.SweepPIDNamespace(); err != nil {
			fmt.Fprintf(os.Stderr, "dsh-agent: --sweep-pids: %v\n", err)
			return 1
		}
	}
	cfg := bashlocal.Config()
	if len(guardRoots) > 0 {
		// After --no-setid, whose filter every thread must share when it
		// is loaded: the guard's thread carries one more.
		for _, r := range guardRoots {
			if !filepath.IsAbs(r) {
				fmt.Fprintf(os.Stderr, "dsh-agent: --guard-root %q is not absolute\n", r)
				return 2
			}
		}
		g, err := nameguard.Start(guardRoots)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dsh-agent: --guard-root: %v\n", err)
			return 1
		}
		cfg.Launcher = guardedLauncher{g}
	}
	stream, err := takeStdio()
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-agent: %v\n", err)
		return 1
	}
	localexec.ClaimAllChildren() // the executor is alone in this process
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	impl := localexec.New(cfg)
	if *dial != "" {
		serveSide(ctx, impl, *dial, *dialToken)
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
// that connection too, until it ends or ctx is done, once the listener has
// sent token first (proving it is the executor that started this agent,
// not a process that put a socket of its own at path). A failed connection
// is said on stderr (the executor's log) and leaves stdio alone to carry
// the calls: the executor, seeing no connection, uses it.
func serveSide(ctx context.Context, impl pluginapi.ShellExecutor, path, token string) {
	want, err := hex.DecodeString(token)
	if err != nil || len(want) < 16 {
		fmt.Fprintln(os.Stderr, "dsh-agent: no side stream, calls cross stdio: --dial needs --dial-token, 16 bytes or more in hex")
		return
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "dsh-agent: no side stream, calls cross stdio: %v\n", err)
		return
	}
	got := make([]byte, len(want))
	_ = conn.SetReadDeadline(time.Now().Add(sideTokenWait))
	if _, err := io.ReadFull(conn, got); err != nil || subtle.ConstantTimeCompare(got, want) != 1 {
		conn.Close()
		fmt.Fprintln(os.Stderr, "dsh-agent: no side stream, calls cross stdio: the socket's listener did not send the token")
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	go func() { _ = pluginapi.ServeSideStream(ctx, impl, conn) }()
}

// sideTokenWait bounds the wait for the listener's token.
const sideTokenWait = 10 * time.Second
