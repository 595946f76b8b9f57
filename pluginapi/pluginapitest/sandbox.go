package pluginapitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// SandboxOptions adjust RunSandbox to an executor.
type SandboxOptions struct {
	// Settings (a JSON object) are what the executor needs to run at all;
	// each case adds its policy under pluginapi.SandboxPolicySetting.
	Settings string
	// Workspace is the workspace's path where the commands run: they start
	// there, workspace-write and danger-full-access write it, read-only
	// does not.
	Workspace string
	// WritableRoot, when set, is a directory the executor takes as one of
	// the policy's writable roots (the same path here and where the
	// commands run): workspace-write (and danger-full-access) writes it,
	// read-only does not. Empty
	// for an executor that takes none.
	WritableRoot string
	// Remote is Options.Remote: the factory's executor is across a process
	// boundary already.
	Remote bool
}

// RunSandbox checks the sandbox modes of an executor whose commands run in
// a container of their own, one per mode, with a root file system of its
// own (the container executor, the kubernetes executor), over gRPC:
//
//   - each mode is a shape: workspace-write writes the workspace and the
//     writable roots but not the root file system, read-only writes
//     neither (but /tmp), danger-full-access writes its root; each result
//     names its mode, its writable roots, and flags a refused write as a
//     likely denial;
//   - a mode without network has none, or its facts say the denial is not
//     enforced; the facts never claim one that does not hold;
//   - a command that asks for no mode runs in the policy's default, in the
//     background as in the foreground;
//   - each limit the policy asks for is in force where the facts list it,
//     or the facts say it is not enforced;
//   - a policy the executor cannot take is refused naming the key, and a
//     mode it does not know is refused;
//   - without a network, a failed lookup reads as a likely denial, with its
//     line as evidence, and package managers are told not to retry.
func RunSandbox(t *testing.T, factory Factory, opts SandboxOptions) {
	if opts.Workspace == "" {
		t.Fatal("SandboxOptions.Workspace is required: where the commands' workspace is")
	}
	for _, c := range sandboxCases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*caseTimeout)
			defer cancel()
			s := &sandboxEnv{t: t, ctx: ctx, opts: opts, factory: factory}
			c.run(s)
		})
	}
}

// sandboxEnv is what a sandbox case gets.
type sandboxEnv struct {
	t       *testing.T
	ctx     context.Context
	opts    SandboxOptions
	factory Factory
}

// configure makes an executor with policy, and closes it when the case
// ends. It returns the executor over the wire and Configure's error.
func (s *sandboxEnv) configure(policy map[string]any) (pluginapi.ShellExecutor, error) {
	s.t.Helper()
	impl := s.factory(s.t)
	x := impl
	if !s.opts.Remote {
		x = Serve(s.t, impl)
	}
	s.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := x.Close(ctx); err != nil {
			s.t.Errorf("Close: %v", err)
		}
	})
	settings := map[string]any{}
	if s.opts.Settings != "" {
		if err := json.Unmarshal([]byte(s.opts.Settings), &settings); err != nil {
			s.t.Fatalf("SandboxOptions.Settings %s is not a JSON object: %v", s.opts.Settings, err)
		}
	}
	settings[pluginapi.SandboxPolicySetting] = policy
	b, err := json.Marshal(settings)
	if err != nil {
		s.t.Fatal(err)
	}
	c, ok := x.(pluginapi.Configurable)
	if !ok {
		s.t.Fatalf("a sandboxing executor takes its policy in its settings; %T is not pluginapi.Configurable", x)
	}
	return x, c.Configure(s.ctx, b)
}

// executor is configure for a policy the executor must take.
func (s *sandboxEnv) executor(policy map[string]any) pluginapi.ShellExecutor {
	s.t.Helper()
	x, err := s.configure(policy)
	if err != nil {
		s.t.Fatalf("Configure with the policy %v: %v", policy, err)
	}
	return x
}

// run runs command in mode ("": the default) or fails the case.
func (s *sandboxEnv) run(x pluginapi.ShellExecutor, mode pluginapi.SandboxMode, command string) pluginapi.RunResult {
	s.t.Helper()
	res, err := pluginapi.RunRequest(s.ctx, x, pluginapi.ExecRequest{Command: command, SandboxMode: mode}, nil)
	if err != nil {
		s.t.Fatalf("%q in mode %q: %v", command, mode, err)
	}
	if res.Sandbox == nil {
		s.t.Fatalf("%q in mode %q: a sandboxed run's result has sandbox facts; got none: %+v", command, mode, res)
	}
	return res
}

var sandboxCases = []struct {
	name string
	run  func(s *sandboxEnv)
}{
	{"modes shape what a command may write", sandboxModes},
	{"the default mode is the policy's, in the background too", sandboxDefaultMode},
	{"the limits asked for hold or are said not to", sandboxLimits},
	{"a policy the executor cannot take is refused", sandboxBadPolicy},
	{"offline failures read as denials", sandboxOffline},
}

// writeProbe prints name=writable, name=read-only (the file system is)
// or name=denied (another refusal) for a file made at path, leaving the
// refusal's message on stderr for the denial reader.
func writeProbe(name, path string) string {
	return fmt.Sprintf(`if out=$(touch %[2]s 2>&1); then rm -f %[2]s; echo %[1]s=writable; else echo "$out" >&2; case $out in *"Read-only file system"*) echo %[1]s=read-only;; *) echo %[1]s=denied;; esac; fi
`, name, shellQuote(path))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func sandboxModes(s *sandboxEnv) {
	policy := map[string]any{}
	if s.opts.WritableRoot != "" {
		policy["writableRoots"] = []string{s.opts.WritableRoot}
	}
	x := s.executor(policy)
	if d, err := x.Describe(s.ctx); err != nil || d.SandboxMode != pluginapi.SandboxWorkspaceWrite || len(d.Uncontained) == 0 {
		s.t.Errorf("Describe: mode %q, uncontained %q, %v; want workspace-write (the policy's default without one) and what the executor does not contain", d.SandboxMode, d.Uncontained, err)
	}
	probe := "echo pwd=$(pwd)\n" + writeProbe("workspace", s.opts.Workspace+"/.dsh-sandbox-probe") +
		writeProbe("root", "/.dsh-sandbox-probe") + writeProbe("tmp", "/tmp/.dsh-sandbox-probe")
	if s.opts.WritableRoot != "" {
		probe += writeProbe("extra", s.opts.WritableRoot+"/.dsh-sandbox-probe")
	}
	probe += "echo net=$(ls /sys/class/net | tr '\\n' ,)\n"
	want := map[pluginapi.SandboxMode][]string{
		pluginapi.SandboxWorkspaceWrite:   {"workspace=writable", "root=read-only", "tmp=writable", "extra=writable"},
		pluginapi.SandboxReadOnly:         {"workspace=read-only", "root=read-only", "tmp=writable", "extra=read-only"},
		pluginapi.SandboxDangerFullAccess: {"workspace=writable", "root=writable", "tmp=writable"},
	}
	for _, mode := range []pluginapi.SandboxMode{"", pluginapi.SandboxReadOnly, pluginapi.SandboxDangerFullAccess} {
		res := s.run(x, mode, probe)
		if mode == "" {
			mode = pluginapi.SandboxWorkspaceWrite
		}
		got := strings.Fields(res.Stdout.Text)
		for _, w := range append(want[mode], "pwd="+s.opts.Workspace) {
			if strings.HasPrefix(w, "extra=") && s.opts.WritableRoot == "" {
				continue
			}
			if !slices.Contains(got, w) {
				s.t.Errorf("%s: the probe says %q (stderr %q); want %s", mode, got, res.Stderr.Text, w)
			}
		}
		f := res.Sandbox
		if f.Mode != mode {
			s.t.Errorf("%s: the facts name the mode %q", mode, f.Mode)
		}
		refused := mode != pluginapi.SandboxDangerFullAccess
		if f.LikelyDenial != refused {
			s.t.Errorf("%s: likely denial %v (evidence %q), stderr %q; want %v: a refused write is flagged, and nothing else", mode, f.LikelyDenial, f.Evidence, res.Stderr.Text, refused)
		}
		if slices.Contains(f.WritableRoots, s.opts.Workspace) == (mode == pluginapi.SandboxReadOnly) {
			s.t.Errorf("%s: the facts' writable roots %q misplace the workspace %s", mode, f.WritableRoots, s.opts.Workspace)
		}
		if s.opts.WritableRoot != "" && slices.Contains(f.WritableRoots, s.opts.WritableRoot) == (mode == pluginapi.SandboxReadOnly) {
			s.t.Errorf("%s: the facts' writable roots %q misplace the policy's writable root %s", mode, f.WritableRoots, s.opts.WritableRoot)
		}
		if refused {
			checkNoNetwork(s.t, mode, f, got)
		}
	}
}

// checkNoNetwork checks a mode without network: it has only loopback
// where the facts say it is enforced, or the facts say it is not.
func checkNoNetwork(t *testing.T, mode pluginapi.SandboxMode, f *pluginapi.SandboxFacts, probe []string) {
	t.Helper()
	var net string
	for _, w := range probe {
		if v, ok := strings.CutPrefix(w, "net="); ok {
			net = v
		}
	}
	claimed := slices.ContainsFunc(f.Enforced, func(e string) bool { return strings.HasPrefix(e, "network: none") })
	notEnforced := slices.ContainsFunc(f.NotEnforced, func(e string) bool { return strings.HasPrefix(e, "network") })
	switch {
	case claimed && net != "lo,":
		t.Errorf("%s: the facts say %q, and the command sees the interfaces %q", mode, f.Enforced, net)
	case !claimed && !notEnforced:
		t.Errorf("%s: a mode without network says neither that it has none (enforced %q) nor that its denial is not enforced (%q)", mode, f.Enforced, f.NotEnforced)
	}
}

func sandboxDefaultMode(s *sandboxEnv) {
	x := s.executor(map[string]any{"defaultMode": string(pluginapi.SandboxReadOnly)})
	if d, err := x.Describe(s.ctx); err != nil || d.SandboxMode != pluginapi.SandboxReadOnly {
		s.t.Errorf("Describe: mode %q, %v; want the policy's default, read-only", d.SandboxMode, err)
	}
	file := s.opts.Workspace + "/.dsh-sandbox-background"
	spec, err := x.Resolve(s.ctx, pluginapi.ExecRequest{Command: "touch " + shellQuote(file) + "; echo rc=$?"})
	if err != nil {
		s.t.Fatal(err)
	}
	if spec.SandboxMode != pluginapi.SandboxReadOnly {
		s.t.Errorf("Resolve of a request that asks for no mode: %q; want the policy's default, read-only", spec.SandboxMode)
	}
	p, err := x.Start(s.ctx, spec)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := p.Wait(s.ctx); err != nil {
		s.t.Fatal(err)
	}
	r, err := p.ReadOutput(s.ctx)
	if err != nil || strings.Contains(r.Delta, "rc=0") {
		s.t.Errorf("a background command in the default mode, read-only: %q, %v; want its write refused", r.Delta, err)
	}
	res := s.run(x, "", "test -e "+shellQuote(file)+" && echo present || echo absent")
	if res.Stdout.Text != "absent\n" || res.Sandbox.Mode != pluginapi.SandboxReadOnly {
		s.t.Errorf("after a read-only background write: %q in mode %q; want absent, read-only", res.Stdout.Text, res.Sandbox.Mode)
	}
	res = s.run(x, pluginapi.SandboxWorkspaceWrite, "rm -f "+shellQuote(file))
	if code := exitCode(s.t, res); code != 0 || res.Sandbox.Mode != pluginapi.SandboxWorkspaceWrite {
		s.t.Errorf("a command that asks for workspace-write: exit %d in mode %q", code, res.Sandbox.Mode)
	}
}

// A limit asked for, how a command runs into it, and what it says then.
var sandboxLimitChecks = []struct {
	key, fact, mechanism, command, want string
}{
	{"processes", "processes 20 ", "", `for i in $(seq 40); do sleep 5 & done 2>&1; kill $(jobs -p) 2>/dev/null; wait`, "Resource temporarily unavailable"},
	// Only a tmpfs refuses past its size; an emptyDir's sizeLimit evicts
	// the pod later instead.
	{"tmpMiB", "/tmp 4 MiB", "tmpfs", `dd if=/dev/zero of=/tmp/.dsh-sandbox-big bs=1M count=8 2>&1; rm -f /tmp/.dsh-sandbox-big`, "No space left on device"},
	{"memoryMiB", "memory 64 MiB", "", `bash -c 'x=$(yes | head -c 268435456); echo sur""vived'; echo rc=$?`, "rc=137"},
}

func sandboxLimits(s *sandboxEnv) {
	x := s.executor(map[string]any{"limits": map[string]any{"processes": 20, "tmpMiB": 4, "memoryMiB": 64}})
	f := s.run(x, "", "true").Sandbox
	for _, l := range sandboxLimitChecks {
		listed := slices.ContainsFunc(f.Limits, func(e string) bool { return strings.HasPrefix(e, l.fact) })
		said := slices.ContainsFunc(f.NotEnforced, func(e string) bool {
			return strings.HasPrefix(e, strings.Fields(l.fact)[0])
		})
		if !listed && !said {
			s.t.Errorf("limits.%s: the facts neither list it in force (%q) nor say it is not enforced (%q)", l.key, f.Limits, f.NotEnforced)
			continue
		}
		if !listed || !slices.ContainsFunc(f.Limits, func(e string) bool { return strings.HasPrefix(e, l.fact) && strings.Contains(e, l.mechanism) }) {
			continue
		}
		res := s.run(x, "", l.command)
		if out := res.Stdout.Text + res.Stderr.Text; !strings.Contains(out, l.want) || strings.Contains(out, "survived") {
			s.t.Errorf("limits.%s, listed in force (%q): the command that runs into it says %q; want %q", l.key, f.Limits, out, l.want)
		}
	}
}

func sandboxBadPolicy(s *sandboxEnv) {
	for _, tt := range []struct {
		policy map[string]any
		key    string
	}{
		{map[string]any{"defaultMode": "yolo"}, "defaultMode"},
		{map[string]any{"limits": map[string]any{"processes": -1}}, "processes"},
		{map[string]any{"unknownKey": true}, "unknownKey"},
	} {
		_, err := s.configure(tt.policy)
		if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), tt.key) {
			s.t.Errorf("policy %v: %v; want ErrInvalidSettings naming %s", tt.policy, err, tt.key)
		}
	}
	x := s.executor(map[string]any{})
	if _, err := x.Resolve(s.ctx, pluginapi.ExecRequest{Command: "true", SandboxMode: "bogus"}); !errors.Is(err, pluginapi.ErrInvalidRequest) {
		s.t.Errorf("mode bogus: %v; want ErrInvalidRequest", err)
	}
}

func sandboxOffline(s *sandboxEnv) {
	x := s.executor(map[string]any{})
	const cmd = `echo "curl: (6) Could not resolve host: example.com" >&2; echo "pip=$PIP_RETRIES npm=$npm_config_fetch_retries"; exit 6`
	res := s.run(x, pluginapi.SandboxWorkspaceWrite, cmd)
	if f := res.Sandbox; !f.LikelyDenial || !slices.ContainsFunc(f.Evidence, func(e string) bool { return strings.Contains(e, "Could not resolve host") }) {
		s.t.Errorf("no network: facts %+v; want the failed lookup as a likely denial, with its line as evidence", f)
	}
	if got := strings.TrimSpace(res.Stdout.Text); got != "pip=1 npm=0" {
		s.t.Errorf("no network: %q; want pip=1 npm=0 (package managers do not retry)", got)
	}
	res = s.run(x, pluginapi.SandboxDangerFullAccess, cmd)
	if got := strings.TrimSpace(res.Stdout.Text); got != "pip= npm=" || res.Sandbox.LikelyDenial {
		s.t.Errorf("with a network: %q, likely denial %v; want neither the retry settings nor a denial", got, res.Sandbox.LikelyDenial)
	}
}
