package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// Exit statuses of `dsh-host run` beyond the command's own.
const (
	exitTimedOut = 124
	exitCannot   = 125
	exitUsage    = 2
	// exitInterrupted: the command ran, but how it ended is unknown (the
	// executor lost it), as ssh(1) exits 255 when its connection drops.
	exitInterrupted = 255
)

// closeTimeout bounds the teardown after the command settled.
const closeTimeout = 15 * time.Second

func runCmd(args []string) int {
	fs := flag.NewFlagSet("dsh-host run", flag.ContinueOnError)
	var mf mountFlags
	mf.register(fs, "`NAME|PATH` of the executor: a built-in name, a name in the plugin directory, or a plugin binary's path (repeatable; exactly one may provide the shell)")
	fs.StringVar(&mf.spillDir, "spill-dir", "", "keep the full output of truncated streams in `DIR` (default: a private directory removed on exit)")
	var timeout time.Duration
	fs.Var(durationFlag{&timeout}, "timeout", "foreground timeout, a `DURATION` such as 30s or 2m (default: the executor's, 120s)")
	workdir := fs.String("workdir", "", "`DIR` the command runs in (default: the current directory)")
	asJSON := fs.Bool("json", false, "print the whole run result as JSON instead of the output and the marker")
	sandbox := fs.String("sandbox", "", "the sandbox `MODE` of a sandboxing executor: read-only, workspace-write or danger-full-access (default: the executor's)")
	if status, ok := parseFlags(fs, args); !ok {
		return status
	}
	mf.workdir = *workdir
	command := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(command) == "" {
		return usageError("no command given")
	}
	if timeout < 0 || (timeout > 0 && timeout < time.Millisecond) {
		return usageError("--timeout %s: not a positive duration of at least 1ms", timeout)
	}
	if *sandbox != "" && !slices.Contains(sandboxModes, pluginapi.SandboxMode(*sandbox)) {
		return usageError("--sandbox %s: not a sandbox mode (%s)", *sandbox, joinModes(sandboxModes))
	}
	// SIGINT and SIGTERM abort the command; the result still settles.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	resolved, err := mf.setup().Load()
	if err != nil {
		return cannot(err)
	}
	m, err := resolved.Mount(ctx)
	if err != nil {
		return cannot(err)
	}
	h := m.Shell()
	var runErr error
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if err := m.Close(cctx); err != nil && runErr == nil {
			fmt.Fprintf(os.Stderr, "dsh-host run: %v\n", cliError(err))
		}
	}()

	if d := h.Description(); *sandbox != "" && d.SandboxMode == pluginapi.SandboxNone {
		runErr = errUsage // said here; Close need not add to it
		return usageError("--sandbox %s: executor %s does not sandbox (bash-sandbox does)", *sandbox, d.Name)
	}
	req := pluginapi.ExecRequest{Command: command, Workdir: *workdir, TimeoutMs: timeout.Milliseconds(),
		SandboxMode: pluginapi.SandboxMode(*sandbox)}
	if timeout > 0 {
		// The executor caps a timeout above its maximum; asked for on the
		// command line, a shorter one than asked would be a surprise.
		spec, err := h.Shell().Resolve(ctx, req)
		if err == nil && spec.TimeoutMs < req.TimeoutMs {
			runErr = errUsage
			return usageError("--timeout %s: above executor %s's maximum, %s (%s.maxTimeoutMs in the settings)",
				timeout, h.Description().Name, spec.Timeout(), pluginapi.SettingsNamespace)
		}
	}
	// The output is watched live even for --json: a run the executor loses
	// settles with what came before.
	out := &liveOutput{}
	onOutput := out.write
	if *asJSON {
		onOutput = func(pluginapi.Stream, []byte) {}
	}
	res, err := h.RunRequest(ctx, req, onOutput)
	if err != nil {
		runErr = err // one line says it; Close need not say it again
		if errors.Is(err, pluginapi.ErrInvalidRequest) {
			err = fmt.Errorf("%w: %w", errUsage, err) // the flags asked for what the executor refuses
		}
		return cannot(err)
	}

	if mf.spillDir == "" && *asJSON {
		// The executor's private spill files go when this process does.
		forgetSpill(&res.Stdout)
		forgetSpill(&res.Stderr)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(res)
	} else {
		out.finish(res)
		// Only a spill file that outlives this process is worth naming
		// (--spill-dir): the output was shown whole as it came.
		for _, o := range []pluginapi.CollectedOutput{res.Stdout, res.Stderr} {
			if o.SpillPath != "" && mf.spillDir != "" {
				fmt.Fprintf(os.Stderr, "dsh-host run: the full stream is in %s\n", o.SpillPath)
			}
		}
		if res.Interrupted != "" {
			fmt.Fprintf(os.Stderr, "dsh-host run: the executor lost the command, how it ended is unknown: %s\n", res.Interrupted)
		}
		if res.Sandbox != nil && res.Sandbox.Interrupted != "" {
			fmt.Fprintf(os.Stderr, "dsh-host run: the sandbox lost the command, how it ended is unknown: %s\n", res.Sandbox.Interrupted)
		}
	}
	return exitStatus(res)
}

// sandboxModes are the modes --sandbox takes: the vocabulary of the
// contract.
var sandboxModes = []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess}

// joinModes lists modes for a person: "a, b or c".
func joinModes(modes []pluginapi.SandboxMode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = string(m)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// liveOutput copies a command's streams to ours as they arrive and
// remembers whether stdout ended in a newline, so the marker gets its own
// line.
type liveOutput struct {
	mu          sync.Mutex
	wrote       bool
	endsNewline bool
}

func (o *liveOutput) write(st pluginapi.Stream, data []byte) {
	if len(data) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	w := os.Stdout
	if st == pluginapi.Stderr {
		w = os.Stderr
	} else {
		o.wrote = true
		o.endsNewline = data[len(data)-1] == '\n'
	}
	_, _ = w.Write(data)
}

// finish prints the notes and the marker line after the output.
func (o *liveOutput) finish(res pluginapi.RunResult) {
	if res.TimedOut {
		fmt.Fprintf(os.Stderr, "dsh-host run: timed out after %s; the command's process group was killed\n",
			time.Duration(res.TimeoutMs)*time.Millisecond)
	}
	if res.Aborted {
		fmt.Fprintf(os.Stderr, "dsh-host run: aborted (%s); the command's process group was killed\n", res.AbortReason)
	}
	marker := pluginapi.Render("", res.ExitStatus())
	if marker == "" {
		return
	}
	if o.wrote && !o.endsNewline {
		fmt.Fprintln(os.Stdout)
	}
	fmt.Fprintln(os.Stdout, strings.TrimPrefix(marker, "\n"))
}

// forgetSpill drops the path of a spill file that will not outlive this
// process, and says how to keep it.
func forgetSpill(out *pluginapi.CollectedOutput) {
	if out.SpillPath == "" {
		return
	}
	out.SpillPath = ""
	fmt.Fprintln(os.Stderr, "dsh-host run: the collected output was truncated; with --spill-dir DIR the full stream is kept")
}

// exitStatus maps a result to this process's exit status.
func exitStatus(res pluginapi.RunResult) int {
	switch {
	case res.TimedOut:
		return exitTimedOut
	case res.Signal != "":
		if n := signalNumber(res.Signal); n != 0 {
			return 128 + int(n)
		}
		return 128
	case res.Aborted && (res.ExitCode == nil || *res.ExitCode == 0):
		return 130 // aborted, though the command exited cleanly
	case res.ExitCode != nil:
		return *res.ExitCode
	case res.Interrupted != "" || res.Sandbox != nil && res.Sandbox.Interrupted != "":
		return exitInterrupted // how it ended is unknown: the executor or its sandbox lost it
	}
	return exitCannot
}

// cannot reports a failure and returns its exit status: 2 for the user's
// mistake, 125 for the infrastructure's.
func cannot(err error) int {
	if errors.Is(err, errUsage) || errors.As(err, new(*host.CallerError)) {
		return usageError("%s", cliError(err))
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", commandName, cliError(err))
	return exitCannot
}

// cliError drops the package prefixes that mean nothing to a person. A
// prefix goes only where it is a whole segment of the message, at its start
// or after ": ": a path that merely ends in one ("/opt/dsh-host: ...") is
// left as it is.
func cliError(err error) string {
	return strings.TrimPrefix(host.ErrorText(err), errUsage.Error()+": ")
}

// cliLogger logs nothing unless DSH_LOG_LEVEL names a level (trace, debug,
// info, warn, error): what goes wrong is said in one line of our own.
func cliLogger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "dsh-host", Output: os.Stderr, Level: logLevel(hclog.Off)})
}

// logLevel is the level DSH_LOG_LEVEL names, or def when it names none; a
// value that is no level is said, once, on stderr, rather than ignored.
func logLevel(def hclog.Level) hclog.Level {
	v := os.Getenv("DSH_LOG_LEVEL")
	if v == "" {
		return def
	}
	level := hclog.LevelFromString(v)
	if level == hclog.NoLevel {
		fmt.Fprintf(os.Stderr, "%s: DSH_LOG_LEVEL=%q is not a level (trace, debug, info, warn, error, off); logging at %s\n", commandName, v, def)
		return def
	}
	return level
}
