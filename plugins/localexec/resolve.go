package localexec

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// DshEnvPrefix is the prefix every managed environment key carries.
const DshEnvPrefix = "DSH_"

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", pluginapi.ErrInvalidRequest, fmt.Sprintf(format, args...))
}

// capped fills a zero value with def, caps it at max, and rejects a negative.
func capped(field string, v, def, max int64) (int64, error) {
	switch {
	case v < 0:
		return 0, invalid("%s is negative (%d)", field, v)
	case v == 0:
		return def, nil
	case v > max:
		return max, nil
	}
	return v, nil
}

// Resolve fills defaults into req and caps every field.
func (e *Executor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	lim := e.settings()
	if strings.TrimSpace(req.Command) == "" {
		return pluginapi.ExecSpec{}, invalid("empty command")
	}
	if strings.IndexByte(req.Command, 0) >= 0 {
		return pluginapi.ExecSpec{}, invalid("command contains a NUL byte")
	}
	if len(req.Command) > e.cfg.MaxArgBytes {
		return pluginapi.ExecSpec{}, invalid("command is %d bytes; the most one argument can carry is %d (put a long script in a file)",
			len(req.Command), e.cfg.MaxArgBytes)
	}
	timeout, err := capped("timeoutMs", req.TimeoutMs, lim.DefaultTimeoutMs, lim.MaxTimeoutMs)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	outMax, err := capped("stdoutMaxBytes", req.StdoutMaxBytes, lim.DefaultOutputBytes, lim.MaxOutputBytes)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	errMax, err := capped("stderrMaxBytes", req.StderrMaxBytes, lim.DefaultOutputBytes, lim.MaxOutputBytes)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	workdir := req.Workdir
	if workdir == "" {
		workdir = "."
	}
	if strings.IndexByte(workdir, 0) >= 0 {
		return pluginapi.ExecSpec{}, invalid("workdir contains a NUL byte")
	}
	if workdir, err = filepath.Abs(workdir); err != nil {
		return pluginapi.ExecSpec{}, fmt.Errorf("%w: %v", pluginapi.ErrUnusableWorkdir, err)
	}
	if err := checkEnv("env", req.Env, false); err != nil {
		return pluginapi.ExecSpec{}, err
	}
	if err := checkEnv("dshEnv", req.DshEnv, true); err != nil {
		return pluginapi.ExecSpec{}, err
	}
	for _, env := range []map[string]string{req.Env, req.DshEnv} {
		for k, v := range env {
			if len(k)+1+len(v) > e.cfg.MaxArgBytes {
				return pluginapi.ExecSpec{}, invalid("environment entry %s is %d bytes; the most one can carry is %d",
					k, len(k)+1+len(v), e.cfg.MaxArgBytes)
			}
		}
	}
	mode, err := e.resolveMode(req.SandboxMode)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	terminal, err := e.resolveInteractive(req)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	return pluginapi.ExecSpec{
		Terminal:       terminal,
		OpenStdin:      req.OpenStdin || terminal != nil,
		Command:        req.Command,
		Workdir:        workdir,
		TimeoutMs:      timeout,
		Stdin:          req.Stdin,
		Env:            req.Env,
		DshEnv:         req.DshEnv,
		StdoutMaxBytes: outMax,
		StderrMaxBytes: errMax,
		KillGraceMs:    lim.KillGraceMs,
		SandboxMode:    mode,
		Partition:      req.Partition,
	}, nil
}

// resolveInteractive checks what req asks of a terminal and an open stdin:
// what the executor offers, and a terminal's size. It returns the
// terminal, the caller's own copy.
func (e *Executor) resolveInteractive(req pluginapi.ExecRequest) (*pluginapi.Terminal, error) {
	switch {
	case req.Terminal != nil && !(e.interactive() && terminalsHere):
		return nil, fmt.Errorf("%w: executor %q does not offer terminals", pluginapi.ErrUnsupported, e.cfg.Name)
	case req.OpenStdin && !e.interactive():
		return nil, fmt.Errorf("%w: executor %q does not offer input to a running command", pluginapi.ErrUnsupported, e.cfg.Name)
	case req.Terminal == nil:
		return nil, nil
	}
	if err := pluginapi.CheckTerminalSize(req.Terminal.Rows, req.Terminal.Cols); err != nil {
		return nil, err
	}
	t := *req.Terminal
	return &t, nil
}

// resolveMode is the mode a request runs in: the sandbox's default unless
// it asks for another the sandbox offers. An executor without a sandbox
// takes no mode.
func (e *Executor) resolveMode(asked pluginapi.SandboxMode) (pluginapi.SandboxMode, error) {
	if e.cfg.Sandbox == nil {
		if asked != pluginapi.SandboxNone {
			return "", invalid("sandbox mode %q requested, but %s does not sandbox", asked, e.cfg.Name)
		}
		return "", nil
	}
	if asked == pluginapi.SandboxNone {
		return e.cfg.Sandbox.DefaultMode(), nil
	}
	if !slices.Contains(e.cfg.Sandbox.Modes(), asked) {
		return "", invalid("sandbox mode %q: %s offers %v", asked, e.cfg.Name, e.cfg.Sandbox.Modes())
	}
	return asked, nil
}

// checkEnv rejects keys a process environment cannot carry, and managed keys
// outside DSH_*.
func checkEnv(field string, env map[string]string, managed bool) error {
	for k, v := range env {
		switch {
		case k == "":
			return invalid("%s has an empty key", field)
		case strings.ContainsAny(k, "=\x00"):
			return invalid("%s key %q contains '=' or NUL", field, k)
		case strings.IndexByte(v, 0) >= 0:
			return invalid("%s value of %s contains a NUL byte", field, k)
		case managed && !strings.HasPrefix(k, DshEnvPrefix):
			return invalid("%s key %q is not a DSH_* key", field, k)
		case k == ExecIDVar:
			return invalid("%s key %s is the executor's own", field, k)
		}
	}
	return nil
}

// checkResolved rejects a spec that Resolve could not have produced.
func (e *Executor) checkResolved(spec pluginapi.ExecSpec) error {
	lim := e.settings()
	bad := func(what string) error {
		return fmt.Errorf("%w: %s", pluginapi.ErrSpecNotResolved, what)
	}
	switch {
	case spec.Command == "" || strings.IndexByte(spec.Command, 0) >= 0:
		return bad("command is empty or contains NUL")
	case spec.TimeoutMs <= 0 || spec.TimeoutMs > lim.MaxTimeoutMs:
		return bad(fmt.Sprintf("timeoutMs %d outside (0, %d]", spec.TimeoutMs, lim.MaxTimeoutMs))
	case spec.StdoutMaxBytes <= 0 || spec.StdoutMaxBytes > lim.MaxOutputBytes:
		return bad(fmt.Sprintf("stdoutMaxBytes %d outside (0, %d]", spec.StdoutMaxBytes, lim.MaxOutputBytes))
	case spec.StderrMaxBytes <= 0 || spec.StderrMaxBytes > lim.MaxOutputBytes:
		return bad(fmt.Sprintf("stderrMaxBytes %d outside (0, %d]", spec.StderrMaxBytes, lim.MaxOutputBytes))
	case spec.KillGraceMs <= 0 || spec.KillGraceMs > MaxKillGraceMs:
		return bad(fmt.Sprintf("killGraceMs %d outside (0, %d]", spec.KillGraceMs, MaxKillGraceMs))
	case !filepath.IsAbs(spec.Workdir):
		return bad(fmt.Sprintf("workdir %q is not absolute", spec.Workdir))
	case e.cfg.Sandbox == nil && spec.SandboxMode != pluginapi.SandboxNone:
		return bad(fmt.Sprintf("sandbox mode %q on an executor that does not sandbox", spec.SandboxMode))
	case e.cfg.Sandbox != nil && !slices.Contains(e.cfg.Sandbox.Modes(), spec.SandboxMode):
		return bad(fmt.Sprintf("sandbox mode %q is not one of %v", spec.SandboxMode, e.cfg.Sandbox.Modes()))
	case spec.Terminal != nil && !spec.OpenStdin:
		return bad("a terminal without an open stdin")
	case spec.Interactive() && !e.interactive():
		return bad(fmt.Sprintf("a terminal or an open stdin on %s, which offers neither", e.cfg.Name))
	}
	if spec.Terminal != nil {
		if err := pluginapi.CheckTerminalSize(spec.Terminal.Rows, spec.Terminal.Cols); err != nil {
			return bad(err.Error())
		}
	}
	if err := checkEnv("env", spec.Env, false); err != nil {
		return bad(err.Error())
	}
	if err := checkEnv("dshEnv", spec.DshEnv, true); err != nil {
		return bad(err.Error())
	}
	return nil
}
