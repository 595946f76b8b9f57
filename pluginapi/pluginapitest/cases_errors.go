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
			e.t.Fatalf("Run in %s: %v, want ErrUnusableWorkdir", missing, err)
		}
		if !strings.Contains(err.Error(), missing) {
			e.t.Errorf("error %q does not name the directory", err)
		}
	}},
	{"errors/a workdir that is a file is an error", func(e *env) {
		file := filepath.Join(e.t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			e.t.Fatal(err)
		}
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: file})
		if _, err := e.x.Run(e.ctx, spec); !errors.Is(err, pluginapi.ErrUnusableWorkdir) {
			e.t.Errorf("Run in a file: %v, want ErrUnusableWorkdir", err)
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
			e.t.Fatal(err)
		}
		if !exit.Killed || exit.ExitCode != nil {
			e.t.Errorf("exit %+v, want killed with no exit code", exit)
		}
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if !strings.Contains(r.Delta, pluginapi.StderrSectionHeader) || !strings.Contains(r.Delta, missing) {
			e.t.Errorf("output %q, want the spawn error naming %s on stderr", r.Delta, missing)
		}
	}},
	{"errors/a done ctx before Run is an error and runs nothing", func(e *env) {
		marker := filepath.Join(e.t.TempDir(), "ran")
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Touch(marker)})
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		for _, x := range e.both() {
			if _, err := x.Run(ctx, spec); !errors.Is(err, pluginapi.ErrAbortedBeforeStart) {
				e.t.Errorf("Run with a done ctx: %v, want ErrAbortedBeforeStart", err)
			}
			if _, err := x.Start(ctx, spec); !errors.Is(err, pluginapi.ErrAbortedBeforeStart) {
				e.t.Errorf("Start with a done ctx: %v, want ErrAbortedBeforeStart", err)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			e.t.Errorf("the command ran although ctx was done")
		}
	}},
	{"errors/an unresolved spec is refused", func(e *env) {
		raw := pluginapi.ExecSpec{Command: e.sh.Exit(0)}
		for _, x := range e.both() {
			if _, err := x.Run(e.ctx, raw); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
				e.t.Errorf("Run of an unresolved spec: %v, want ErrSpecNotResolved", err)
			}
			if _, err := x.Start(e.ctx, raw); !errors.Is(err, pluginapi.ErrSpecNotResolved) {
				e.t.Errorf("Start of an unresolved spec: %v, want ErrSpecNotResolved", err)
			}
		}
	}},
	{"errors/a command longer than one argument can carry is refused clearly", func(e *env) {
		long := "echo " + strings.Repeat("x", 200_000)
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: long})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) && !errors.Is(err, pluginapi.ErrRequestTooLarge) {
			e.t.Errorf("Resolve of a 200 kB command: %v, want a clear refusal", err)
		}
	}},
	{"errors/a request too large for the wire is refused clearly", func(e *env) {
		huge := strings.Repeat("x", pluginapi.MaxRequestBytes+1)
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: "echo " + huge})
		if !errors.Is(err, pluginapi.ErrRequestTooLarge) && !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("Resolve of a %d-byte command: %v, want ErrRequestTooLarge or ErrInvalidRequest", len(huge), err)
		}
	}},
}
