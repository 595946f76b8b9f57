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
			e.t.Fatalf("Describe must answer: %v", err)
		}
		if d.Name == "" || d.Version == "" || d.Platform == "" {
			e.t.Errorf("Describe must name the executor, its version and platform: %+v", d)
		}
		if d.SettingsNamespace != pluginapi.SettingsNamespace {
			e.t.Errorf("Describe must give the settings namespace %q (pluginapi.SettingsNamespace); got %q", pluginapi.SettingsNamespace, d.SettingsNamespace)
		}
		if !slices.Contains(d.Services, pluginapi.ServiceShell) {
			e.t.Errorf("Describe must list the service %q (pluginapi.ServiceShell); got %v", pluginapi.ServiceShell, d.Services)
		}
		if d.SettingsSchema != "" && !json.Valid([]byte(d.SettingsSchema)) {
			e.t.Errorf("Describe's settings schema must be a JSON Schema (JSON); got %s", d.SettingsSchema)
		}
	}},
}

var resolveCases = []suiteCase{
	{"resolve/fills defaults", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if spec.TimeoutMs <= 0 || spec.StdoutMaxBytes <= 0 || spec.StderrMaxBytes <= 0 || spec.KillGraceMs <= 0 {
			e.t.Errorf("Resolve must fill every unset limit with its default (timeoutMs, stdoutMaxBytes, stderrMaxBytes, killGraceMs): %+v", spec)
		}
		if !filepath.IsAbs(spec.Workdir) {
			e.t.Errorf("Resolve must make the workdir absolute (the executor's own when none is asked); got %q", spec.Workdir)
		}
	}},
	{"resolve/caps and the result reports the effective timeout", func(e *env) {
		huge := int64(1) << 50
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: huge, StdoutMaxBytes: huge, StderrMaxBytes: huge})
		if spec.TimeoutMs >= huge || spec.StdoutMaxBytes >= huge || spec.StderrMaxBytes >= huge {
			e.t.Fatalf("Resolve must cap timeoutMs, stdoutMaxBytes and stderrMaxBytes at the executor's maxima: %+v", spec)
		}
		res, err := e.x.Run(e.ctx, spec)
		if err != nil {
			e.t.Fatalf("Run must settle with a result; an error only when the command could not run: %v", err)
		}
		if res.TimeoutMs != spec.TimeoutMs {
			e.t.Errorf("the result must carry the effective (resolved) timeoutMs %d; got %d", spec.TimeoutMs, res.TimeoutMs)
		}
	}},
	{"resolve/carries the partition", func(e *env) {
		spec := e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Partition: "conformance-partition"})
		if spec.Partition != "conformance-partition" {
			e.t.Errorf("Resolve must carry the request's partition into the spec unchanged (Start and Run key on it); got %q", spec.Partition)
		}
	}},
	{"resolve/rejects a negative timeout", func(e *env) {
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: -1})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("Resolve must refuse timeoutMs -1 with ErrInvalidRequest; got %v", err)
		}
	}},
	{"resolve/rejects a managed key outside DSH_*", func(e *env) {
		_, err := e.x.Resolve(e.ctx, pluginapi.ExecRequest{Command: e.sh.Exit(0), DshEnv: map[string]string{"HOME": "/x"}})
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("Resolve must refuse a dshEnv key outside DSH_* (HOME) with ErrInvalidRequest; got %v", err)
		}
	}},
}

var runCases = []suiteCase{
	{"run/exit 0", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Exit(0)})
		if code := exitCode(e.t, res); code != 0 || res.Signal != "" || res.TimedOut || res.Aborted {
			e.t.Errorf("a command that exits 0 must settle with exit code 0, no signal, neither timedOut nor aborted: %+v", res)
		}
	}},
	{"run/exit 3 settles with a result", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Exit(3)})
		if code := exitCode(e.t, res); code != 3 {
			e.t.Errorf("a nonzero exit must be a result with its exit code: got %d, want 3", code)
		}
		if res.TimedOut || res.Aborted || res.Signal != "" {
			e.t.Errorf("a nonzero exit must set no signal, timedOut or aborted: %+v", res)
		}
	}},
	{"run/stdout and stderr apart", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.OutErr("to-out", "to-err")})
		if res.Stdout.Text != "to-out\n" || res.Stderr.Text != "to-err\n" {
			e.t.Errorf("stdout and stderr must be collected apart: stdout %q stderr %q, want %q and %q", res.Stdout.Text, res.Stderr.Text, "to-out\n", "to-err\n")
		}
		if res.Stdout.TotalBytes != 7 || res.Stdout.Truncated {
			e.t.Errorf("TotalBytes must count the stream (7 bytes), and output under the cap is not Truncated: %+v", res.Stdout)
		}
	}},
	{"run/a signal death has a signal and no exit code", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.KillSelf})
		if res.ExitCode != nil || res.Signal != "SIGKILL" {
			e.t.Errorf("a command killed by a signal must settle with no exit code and the signal's name (SIGKILL): exit %v signal %q", res.ExitCode, res.Signal)
		}
		if res.TimedOut || res.Aborted {
			e.t.Errorf("a command that killed itself must set neither timedOut nor aborted: %+v", res)
		}
	}},
	{"run/no stdin reads as empty at once", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Cat, TimeoutMs: 10_000})
		if res.TimedOut || exitCode(e.t, res) != 0 || res.Stdout.Text != "" {
			e.t.Errorf("without stdin a command must read an empty input (/dev/null), not hang on an inherited one: %+v", res)
		}
	}},
	{"run/stdin is written once and closed", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Cat, Stdin: []byte("line one\nline two\n"), TimeoutMs: 10_000})
		if res.TimedOut || res.Stdout.Text != "line one\nline two\n" {
			e.t.Errorf("stdin must be written to the command once, then closed: %+v", res)
		}
	}},
	{"run/paths and environment values need not be UTF-8", func(e *env) {
		dir := filepath.Join(e.workdir(), "caf\xe9")
		if err := os.Mkdir(dir, 0o755); err != nil {
			e.t.Fatal(err)
		}
		value := "na\xefve \xff"
		res := e.run(pluginapi.ExecRequest{Command: e.sh.PrintEnv("DSH_TEST_VALUE"), Workdir: dir,
			Env: map[string]string{"DSH_TEST_VALUE": value}})
		if res.Stdout.Text != value && !e.sh.TextOnly {
			e.t.Errorf("environment values must reach the command byte for byte: it saw %q, want %q", res.Stdout.Text, value)
		}
		if _, err := e.x.Run(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Exit(0), Workdir: dir})); err != nil {
			e.t.Errorf("a workdir whose path is not UTF-8 must work: Run in %q: %v", dir, err)
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
			e.t.Fatalf("RunRequest must resolve and run a plain request: %v", err)
		}
		if res.Stdout.Text != "one-call\n" || live.String() != "one-call\n" || res.TimeoutMs <= 0 {
			e.t.Errorf("RunRequest must resolve, run, and pass stdout to its callback as it comes: result %+v, live stdout %q", res, live.String())
		}
		_, err = pluginapi.RunRequest(e.ctx, e.x, pluginapi.ExecRequest{Command: e.sh.Exit(0), TimeoutMs: -5}, nil)
		if !errors.Is(err, pluginapi.ErrInvalidRequest) {
			e.t.Errorf("RunRequest must refuse timeoutMs -5 with ErrInvalidRequest; got %v", err)
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
			e.t.Fatalf("RunLive must settle with a result: %v", err)
		}
		if got[pluginapi.Stdout].String() != res.Stdout.Text || got[pluginapi.Stderr].String() != res.Stderr.Text {
			e.t.Errorf("RunLive's live output must be the collected output: live stdout %q stderr %q; collected %q %q",
				got[pluginapi.Stdout], got[pluginapi.Stderr], res.Stdout.Text, res.Stderr.Text)
		}
	}},
}
