package pluginapitest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

var describeCases = []suiteCase{
	{"describe/names the shell service and namespace", func(e *env) {
		d, err := e.x.Describe(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if d.Name == "" || d.Version == "" || d.Platform == "" {
			e.t.Errorf("Describe must name the executor, its version and platform: %+v", d)
		}
		if d.SettingsNamespace != pluginapi.SettingsNamespace {
			e.t.Errorf("settings namespace %q, want %q", d.SettingsNamespace, pluginapi.SettingsNamespace)
		}
		if !slices.Contains(d.Services, pluginapi.ServiceShell) {
			e.t.Errorf("services %v do not include %q", d.Services, pluginapi.ServiceShell)
		}
		if d.SettingsSchema != "" && !json.Valid([]byte(d.SettingsSchema)) {
			e.t.Errorf("settings schema is not JSON: %s", d.SettingsSchema)
		}
	}},
}

var resolveCases = []suiteCase{
	{"resolve/fills defaults", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if spec.TimeoutMs <= 0 || spec.StdoutMaxBytes <= 0 || spec.StderrMaxBytes <= 0 || spec.KillGraceMs <= 0 {
			e.t.Errorf("Resolve left a field unset: %+v", spec)
		}
		if !filepath.IsAbs(spec.Workdir) {
			e.t.Errorf("Resolve left workdir %q relative", spec.Workdir)
		}
	}},
	{"resolve/caps and the result reports the effective timeout", func(e *env) {
		huge := int64(1) << 50
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: huge, StdoutMaxBytes: huge, StderrMaxBytes: huge})
		if spec.TimeoutMs >= huge || spec.StdoutMaxBytes >= huge || spec.StderrMaxBytes >= huge {
			e.t.Fatalf("Resolve did not cap: %+v", spec)
		}
		res, err := e.x.Run(e.ctx, spec)
		if err != nil {
			e.t.Fatal(err)
		}
		if res.TimeoutMs != spec.TimeoutMs {
			e.t.Errorf("result timeoutMs %d, want the effective %d", res.TimeoutMs, spec.TimeoutMs)
		}
	}},
	{"resolve/rejects a negative timeout", func(e *env) {
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: -1})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("Resolve with timeoutMs -1: %v, want ErrInvalidRequest", err)
		}
	}},
	{"resolve/rejects a managed key outside DSH_*", func(e *env) {
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: e.sh.Exit(0), DshEnv: map[string]string{"HOME": "/x"}})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("Resolve with dshEnv HOME: %v, want ErrInvalidRequest", err)
		}
	}},
}

var runCases = []suiteCase{
	{"run/exit 0", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if code := exitCode(e.t, res); code != 0 || res.Signal != "" || res.TimedOut || res.Aborted {
			e.t.Errorf("got %+v, want a clean exit 0", res)
		}
	}},
	{"run/exit 3 settles with a result", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Exit(3)})
		if code := exitCode(e.t, res); code != 3 {
			e.t.Errorf("exit code %d, want 3", code)
		}
		if res.TimedOut || res.Aborted || res.Signal != "" {
			e.t.Errorf("exit 3 is not an interrupt: %+v", res)
		}
	}},
	{"run/stdout and stderr apart", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.OutErr("to-out", "to-err")})
		if res.Stdout.Text != "to-out\n" || res.Stderr.Text != "to-err\n" {
			e.t.Errorf("stdout %q stderr %q, want %q and %q", res.Stdout.Text, res.Stderr.Text, "to-out\n", "to-err\n")
		}
		if res.Stdout.TotalBytes != 7 || res.Stdout.Truncated {
			e.t.Errorf("stdout facts %+v, want 7 bytes, not truncated", res.Stdout)
		}
	}},
	{"run/a signal death has a signal and no exit code", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.KillSelf})
		if res.ExitCode != nil || res.Signal != "SIGKILL" {
			e.t.Errorf("exit %v signal %q, want no exit code and SIGKILL", res.ExitCode, res.Signal)
		}
		if res.TimedOut || res.Aborted {
			e.t.Errorf("the command killed itself; neither timeout nor abort: %+v", res)
		}
	}},
	{"run/no stdin reads as empty at once", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Cat, TimeoutMs: 10_000})
		if res.TimedOut || exitCode(e.t, res) != 0 || res.Stdout.Text != "" {
			e.t.Errorf("cat without stdin: %+v, want an empty clean exit", res)
		}
	}},
	{"run/stdin is written once and closed", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Cat, Stdin: []byte("line one\nline two\n"), TimeoutMs: 10_000})
		if res.TimedOut || res.Stdout.Text != "line one\nline two\n" {
			e.t.Errorf("cat with stdin: %+v", res)
		}
	}},
	{"run/paths and environment values need not be UTF-8", func(e *env) {
		dir := filepath.Join(e.t.TempDir(), "caf\xe9")
		if err := os.Mkdir(dir, 0o700); err != nil {
			e.t.Fatal(err)
		}
		value := "na\xefve \xff"
		res := e.run(pluginapi.ExecRequest{Command: e.sh.PrintEnv("DSH_TEST_VALUE"), Workdir: dir,
			Env: map[string]string{"DSH_TEST_VALUE": value}})
		if res.Stdout.Text != value && !e.sh.TextOnly {
			e.t.Errorf("the command saw %q, want the bytes %q", res.Stdout.Text, value)
		}
		if _, err := e.x.Run(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: dir})); err != nil {
			e.t.Errorf("Run in %q: %v", dir, err)
		}
	}},
	{"run/resolve and run in one call", func(e *env) {
		var live strings.Builder
		var mu sync.Mutex
		res, err := pluginapi.RunRequest(e.ctx, e.x, pluginapi.ExecRequest{Command: e.sh.OutErr("one-call", "e")},
			func(st pluginapi.Stream, data []byte) {
				mu.Lock()
				defer mu.Unlock()
				if st == pluginapi.Stdout {
					live.Write(data)
				}
			})
		if err != nil {
			e.t.Fatal(err)
		}
		if res.Stdout.Text != "one-call\n" || live.String() != "one-call\n" || res.TimeoutMs <= 0 {
			e.t.Errorf("result %+v, live stdout %q", res, live.String())
		}
		_, err = pluginapi.RunRequest(e.ctx, e.x, pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: -5}, nil)
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("RunRequest with timeoutMs -5: %v, want ErrInvalidRequest", err)
		}
	}},
	{"run/live output matches the collected output", func(e *env) {
		live, ok := e.x.(pluginapi.LiveRunner)
		if !ok {
			e.t.Skip("executor client does not implement LiveRunner")
		}
		var mu sync.Mutex
		got := map[pluginapi.Stream]*strings.Builder{pluginapi.Stdout: {}, pluginapi.Stderr: {}}
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.OutErr("live-out", "live-err")})
		res, err := live.RunLive(e.ctx, spec, func(st pluginapi.Stream, data []byte) {
			mu.Lock()
			defer mu.Unlock()
			got[st].Write(data)
		})
		if err != nil {
			e.t.Fatal(err)
		}
		if got[pluginapi.Stdout].String() != res.Stdout.Text || got[pluginapi.Stderr].String() != res.Stderr.Text {
			e.t.Errorf("live stdout %q stderr %q; collected %q %q",
				got[pluginapi.Stdout], got[pluginapi.Stderr], res.Stdout.Text, res.Stderr.Text)
		}
	}},
}
