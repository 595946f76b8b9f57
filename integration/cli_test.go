package integration

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The flags each command takes; its help must describe every one.
var commandFlags = map[string][]string{
	"run":     {"executor", "settings", "plugin-dir", "spill-dir", "timeout", "workdir", "json", "sandbox"},
	"mcp":     {"executor", "settings", "plugin-dir", "workdir", "watch"},
	"plugins": {"settings", "plugin-dir"},
	"config":  {"executor", "settings", "plugin-dir", "dump"},
}

// `help CMD`, `CMD -h` and `CMD --help` print that command's usage, every
// flag with a description, on stdout, and exit 0.
func TestCLIHelpPerCommand(t *testing.T) {
	for cmd, flags := range commandFlags {
		for _, args := range [][]string{{"help", cmd}, {cmd, "-h"}, {cmd, "--help"}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				r := dsh(t, scenario(t), args...)
				if r.code != 0 || r.stderr != "" {
					t.Fatalf("exit %d, stderr %q; want 0 and nothing on stderr", r.code, r.stderr)
				}
				if !strings.HasPrefix(r.stdout, "usage: dsh-host "+cmd+" ") {
					t.Errorf("stdout does not start with %s's usage:\n%s", cmd, r.stdout)
				}
				for _, f := range flags {
					// The flag on a line of its own, its description on the next.
					if !regexp.MustCompile(`(?m)^  --` + f + `( \S+)?\n {6}\S.{10,}$`).MatchString(r.stdout) {
						t.Errorf("--%s is not described:\n%s", f, r.stdout)
					}
				}
				for other := range commandFlags {
					if other != cmd && strings.Contains(r.stdout, "usage: dsh-host "+other) {
						t.Errorf("the help of %s shows %s's usage too:\n%s", cmd, other, r.stdout)
					}
				}
			})
		}
	}
}

// A usage error is one line saying what is wrong and a hint where the usage
// is, on stderr, and exit 2, before any plugin starts.
func TestCLIUsageErrorOneLineAndHint(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		says string // what the first line must contain
	}{
		"timeout without a unit": {[]string{"run", "--timeout", "5", "--", "true"}, "--timeout 5: a duration needs a unit, as in 5s"},
		"timeout not a duration": {[]string{"run", "--timeout", "soon", "--", "true"}, "--timeout soon: not a duration"},
		"unknown flag":           {[]string{"run", "--no-such-flag", "--", "true"}, "unknown flag --no-such-flag"},
		"flag without value":     {[]string{"run", "--timeout"}, "--timeout needs a value"},
		"no command":             {[]string{"run"}, "no command given"},
		"mcp argument":           {[]string{"mcp", "extra"}, `unexpected argument "extra"`},
		"plugins unknown flag":   {[]string{"plugins", "--bogus"}, "unknown flag --bogus"},
		"config without dump":    {[]string{"config"}, "--dump"},
		"unknown command":        {[]string{"frobnicate"}, `unknown command "frobnicate"`},
		"unknown executor":       {[]string{"run", "--executor", "no-such-executor", "--", "true"}, `executor "no-such-executor": not built in`},
		"help unknown command":   {[]string{"help", "frobnicate"}, `unknown command "frobnicate"`},
	} {
		t.Run(name, func(t *testing.T) {
			r := dsh(t, scenario(t), c.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2", r.code)
			}
			l := lines(r.stderr)
			if len(l) != 2 || !strings.Contains(l[0], c.says) || !regexp.MustCompile(`^Run 'dsh-host help( \w+)?' for`).MatchString(l[1]) {
				t.Errorf("stderr %q, want one line saying %q and a hint naming the help", r.stderr, c.says)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
		})
	}
}

// --executor with a path that is not there says no such file, with the path
// as given, whole, even when it ends like a package prefix ("dsh-host").
func TestCLIExecutorNoSuchFile(t *testing.T) {
	for _, path := range []string{"/nonexistent", filepath.Join(t.TempDir(), "dsh-host"), "./no such/dsh-registry"} {
		r := dsh(t, scenario(t), "run", "--executor", path, "--", "true")
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", path, r.code)
		}
		if l := lines(r.stderr); len(l) != 2 || l[0] != "dsh-host run: executor "+path+": no such file" {
			t.Errorf("%s: stderr %q, want the line %q and a hint", path, r.stderr, "dsh-host run: executor "+path+": no such file")
		}
	}
}

// --sandbox with a mode that is none, or with an executor that does not
// sandbox, is a usage error: one line and a hint, exit 2, and (scenario)
// the plugin it mounted to ask is gone.
func TestCLISandboxUsageErrors(t *testing.T) {
	for name, c := range map[string]struct {
		args []string
		says string
	}{
		"bogus mode":               {[]string{"run", "--sandbox", "bogus", "--", "true"}, "--sandbox bogus: not a sandbox mode (read-only, workspace-write or danger-full-access)"},
		"bogus mode, sandboxed":    {[]string{"run", "--executor", "bash-sandbox", "--sandbox", "bogus", "--", "true"}, "--sandbox bogus: not a sandbox mode"},
		"not sandboxing":           {[]string{"run", "--executor", "bash-local", "--sandbox", "read-only", "--", "true"}, "--sandbox read-only: executor bash-local does not sandbox"},
		"external, not sandboxing": {[]string{"run", "--executor", bins.plugin, "--sandbox", "workspace-write", "--", "true"}, "--sandbox workspace-write: executor bash-local does not sandbox"},
	} {
		t.Run(name, func(t *testing.T) {
			r := dsh(t, scenario(t), c.args...)
			if r.code != 2 {
				t.Errorf("exit %d, want 2", r.code)
			}
			if l := lines(r.stderr); len(l) != 2 || !strings.Contains(l[0], c.says) || !strings.HasPrefix(l[1], "Run 'dsh-host help run'") {
				t.Errorf("stderr %q, want one line saying %q and a hint", r.stderr, c.says)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing: the command must not run", r.stdout)
			}
		})
	}
}
