package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// mcpCmd serves the bash tool and the job tools over MCP on stdio:
// `dsh-host mcp`. Logs go to stderr; stdout is the protocol's alone.
func mcpCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host mcp", flag.ContinueOnError)
	var mf mountFlags
	mf.register(fs, "`NAME|PATH` of the executor, as for run (one)")
	workdir := fs.String("workdir", "", "the `DIR` every command runs in (default: the server's working directory); it must exist")
	watch := fs.Bool("watch", false, "reload the executor when its plugin binary changes (not for a built-in executor)")
	listen := fs.String("http", "", "serve MCP's streamable HTTP transport at `ADDR` (host:port; a port alone is on 127.0.0.1; port 0 picks one) instead of stdio; "+
		"the settings' mcp section gives the token and the limits, and an address other than loopback needs the token")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	if fs.NArg() > 0 {
		return usageError("unexpected argument %q: mcp takes flags only", fs.Arg(0))
	}
	if *workdir != "" {
		abs, err := usableWorkdir(*workdir)
		if err != nil {
			return cannot(err)
		}
		mf.workdir = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Its own events (a reload, a refusal) at Info; the plugin process's
	// lines (go-plugin's, the plugin's stderr) only from Warn, unless
	// DSH_LOG_LEVEL asks for more of both.
	level := logLevel(hclog.Info)
	logger := hclog.New(&hclog.LoggerOptions{Name: "dsh-host", Output: os.Stderr, Level: level})
	pluginLevel := hclog.Warn
	if os.Getenv("DSH_LOG_LEVEL") != "" {
		pluginLevel = level
	}
	pluginLogger := hclog.New(&hclog.LoggerOptions{Name: "dsh-host", Output: os.Stderr, Level: pluginLevel})
	setup := mf.setup()
	setup.Logger, setup.PluginLogger = logger, pluginLogger
	r, resolved, err := setup.StartRuntime(ctx)
	if err != nil {
		return cannot(err)
	}
	ex, file := resolved.Executors[0], resolved.File
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := r.Close(cctx); err != nil {
			logger.Error("teardown", "error", err)
		}
	}()
	policy, err := resolved.ApprovalPolicy()
	if err != nil {
		return cannot(err) // the deferred Close tears the runtime down
	}
	if *listen != "" {
		*listen = httpAddr(*listen)
	}
	hopts, err := httpOptions(file, *listen)
	if err != nil {
		return cannot(err)
	}
	opts := mcpserver.Options{Policy: policy, Workdir: mf.workdir, Logger: logger}

	go r.ReloadOnSignal(ctx, syscall.SIGHUP)
	if *watch {
		if !ex.Builtin {
			go func() {
				if err := r.WatchBinary(ctx, ex.Path, 0); err != nil {
					logger.Error("watching the executor binary", "error", err)
				}
			}()
		} else {
			// A reload re-executes this program's running image, never the
			// file at its path: a rebuilt dsh-host is not picked up, and one
			// a command replaced is not run.
			logger.Warn("--watch ignored: the built-in executor is this dsh-host binary, reloaded from its running image; give --executor the path of a plugin binary to watch it", "executor", ex.Name)
		}
	}

	impl := &mcp.Implementation{Name: "dsh-host", Version: "0.1.0"}
	if *listen != "" {
		return serveHTTP(ctx, r, impl, opts, hopts, *listen, logger)
	}
	tools, err := mcpserver.New(ctx, r, opts)
	if err != nil {
		return cannot(err)
	}
	server := mcp.NewServer(impl, nil)
	tools.Register(server)
	stopNotices := tools.SendNotices(ctx, server)
	defer stopNotices()
	if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		logger.Error("serving MCP", "error", err)
		return 1
	}
	return 0
}

// usableWorkdir is dir made absolute, or why commands cannot run in it:
// the error the executor gives for run --workdir, said once at the start.
func usableWorkdir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", pluginapi.ErrUnusableWorkdir, dir, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%w: %s: no such directory", pluginapi.ErrUnusableWorkdir, dir)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%w: %s: %w", pluginapi.ErrUnusableWorkdir, dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("%w: %s is not a directory", pluginapi.ErrUnusableWorkdir, dir)
	}
	return abs, nil
}
