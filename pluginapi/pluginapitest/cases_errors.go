package pluginapitest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

var errorCases = []suiteCase{
	{"errors/a missing workdir is an error naming it", func(e *env) {
		missing := filepath.Join(e.t.TempDir(), "no-such-dir")
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: missing})
		_, err := e.x.Run(e.ctx, spec)
		if !errors.Is(err, pluginapi.ErrUnusableWorkdir) {
			e.t.Fatalf("Run in a missing workdir must fail with ErrUnusableWorkdir; Run in %s: %v", missing, err)
		}
		if !strings.Contains(err.Error(), missing) {
			e.t.Errorf("an unusable workdir's error must name it (%s): %q", missing, err)
		}
	}},
	{"errors/a workdir that is a file is an error", func(e *env) {
		file := filepath.Join(e.t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: file})
		if _, err := e.x.Run(e.ctx, spec); !errors.Is(err, pluginapi.ErrUnusableWorkdir) {
			e.t.Errorf("Run in a workdir that is a file must fail with ErrUnusableWorkdir; got %v", err)
		}
	}},
	{"errors/a background process that cannot spawn settles as killed, the error on stderr", func(e *env) {
		missing := filepath.Join(e.t.TempDir(), "gone")
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: missing}))
		if err != nil {
			e.t.Fatalf("Start returns a handle even when the spawn fails: %v", err)
		}
		exit, err := p.Wait(e.ctx)
		if err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		if !exit.Killed || exit.ExitCode != nil {
			e.t.Errorf("a background process that could not spawn must settle as Killed, with no exit code: %+v", exit)
		}
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatalf("ReadOutput of a known process must not fail: %v", err)
		}
		if !strings.Contains(r.Delta, pluginapi.StderrSectionHeader) || !strings.Contains(r.Delta, missing) {
			e.t.Errorf("a background process that could not spawn must show the error, naming %s, in its stderr section: %q", missing, r.Delta)
		}
	}},
	{"errors/a done ctx before Run is an error and runs nothing", func(e *env) {
		marker := filepath.Join(e.t.TempDir(), "ran")
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Touch(marker)})
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		for _, x := range e.both() {
			if _, err := x.Run(ctx, spec); !errors.Is(err, pluginapi.ErrAbortedBeforeStart) {
				e.t.Errorf("Run with a ctx already done must fail with ErrAbortedBeforeStart; got %v", err)
			}
			if _, err := x.Start(ctx, spec); !errors.Is(err, pluginapi.ErrAbortedBeforeStart) {
				e.t.Errorf("Start with a ctx already done must fail with ErrAbortedBeforeStart; got %v", err)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			e.t.Errorf("a Run or Start whose ctx is already done must run nothing; the command ran")
		}
	}},
	{"errors/an unresolved spec is refused", func(e *env) {
		raw := pluginapi.ExecSpec{Command: e.sh.Exit(0)}
		for _, x := range e.both() {
			if _, err := x.Run(e.ctx, raw); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
				e.t.Errorf("Run must refuse a spec Resolve did not make with ErrSpecNotResolved; got %v", err)
			}
			if _, err := x.Start(e.ctx, raw); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
				e.t.Errorf("Start must refuse a spec Resolve did not make with ErrSpecNotResolved; got %v", err)
			}
		}
	}},
	{"errors/a command longer than one argument can carry is refused clearly", func(e *env) {
		long := "echo " + strings.Repeat("x", 200_000)
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: long})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) && !errors.Is(err, pluginapi.ErrRequestTooLarge) {
			e.t.Errorf("Resolve must refuse a command longer than one argument can carry (200 kB) with ErrInvalidRequest or ErrRequestTooLarge; got %v", err)
		}
	}},
	{"errors/a request too large for the wire is refused clearly", func(e *env) {
		huge := strings.Repeat("x", pluginapi.MaxRequestBytes+1)
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: "echo " + huge})
		if !errors.Is(err, pluginapi.ErrRequestTooLarge) && !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("a request too large for the wire (%d bytes) must be refused with ErrRequestTooLarge or ErrInvalidRequest; got %v", len(huge), err)
		}
	}},
}
