package integration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// Hostile requests, over the real wire to a real plugin: each gets a clear
// error or a descriptive result, and the plugin is still there after all
// of them.
func TestHostileRequests(t *testing.T) {
	tag := scenario(t)
	t.Setenv(tagVar, tag)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: bins.host, Args: host.ServeArgs("bash-local")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 3<<20)
	for _, tc := range []struct {
		name    string
		req     pluginapi.ExecRequest
		wantErr error  // or nil for a result
		says    string // in the error, or in the result's output
	}{
		{"a command larger than a request may be", pluginapi.ExecRequest{Command: "echo " + huge}, pluginapi.ErrRequestTooLarge, "bytes"},
		{"a command larger than one argument may be", pluginapi.ExecRequest{Command: "echo " + huge[:200_000]}, pluginapi.ErrInvalidRequest, "131071"},
		{"an environment value larger than one entry may be", pluginapi.ExecRequest{Command: "true", Env: map[string]string{"BIG": huge[:200_000]}}, pluginapi.ErrInvalidRequest, "BIG"},
		{"many environment entries", pluginapi.ExecRequest{Command: "printf %s \"$E999\"", Env: manyEnv(1000)}, nil, "v999"},
		{"invalid UTF-8", pluginapi.ExecRequest{Command: "printf 'ok\\377\\376'; echo \xff"}, nil, "ok\xff\xfe\xff\n"},
		{"a NUL in the command", pluginapi.ExecRequest{Command: "echo a\x00b"}, pluginapi.ErrInvalidRequest, "NUL"},
		{"a NUL in an environment key", pluginapi.ExecRequest{Command: "true", Env: map[string]string{"A\x00B": "v"}}, pluginapi.ErrInvalidRequest, "NUL"},
		{"a negative timeout", pluginapi.ExecRequest{Command: "true", TimeoutMs: -5}, pluginapi.ErrInvalidRequest, "timeout"},
		{"an enormous timeout", pluginapi.ExecRequest{Command: "true", TimeoutMs: 1 << 62}, nil, ""},
		{"a workdir that is a file", pluginapi.ExecRequest{Command: "true", Workdir: file}, pluginapi.ErrUnusableWorkdir, "not a directory"},
		{"a workdir that is a symlink loop", pluginapi.ExecRequest{Command: "true", Workdir: loop}, pluginapi.ErrUnusableWorkdir, "too many levels"},
		{"a workdir that does not exist", pluginapi.ExecRequest{Command: "true", Workdir: filepath.Join(dir, "nowhere")}, pluginapi.ErrUnusableWorkdir, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := pluginapi.RunRequest(ctx, h.Shell(), tc.req, nil)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(tc.says)) {
					t.Errorf("err %v, want %v saying %q", err, tc.wantErr, tc.says)
				}
				return
			}
			if err != nil {
				t.Fatalf("err %v, want a result", err)
			}
			if res.ExitCode == nil || !strings.Contains(res.Stdout.Text, tc.says) {
				t.Errorf("result %+v, want an exit and %q", res, tc.says)
			}
			if tc.req.TimeoutMs > 0 && res.TimeoutMs >= tc.req.TimeoutMs {
				t.Errorf("an enormous timeout was not capped: %d", res.TimeoutMs)
			}
		})
	}
	if _, err := h.Shell().Describe(ctx); err != nil || h.Exited() {
		t.Fatalf("the plugin did not survive: %v", err)
	}
}

func manyEnv(n int) map[string]string {
	env := map[string]string{}
	for i := range n {
		env["E"+strconv.Itoa(i)] = "v" + strconv.Itoa(i)
	}
	return env
}
