package pluginapi

import (
	"math"
	"reflect"
	"testing"
	"unicode/utf8"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/protobuf/proto"
)

func intPtr(v int) *int { return &v }

// wire sends m through proto.Marshal and proto.Unmarshal into a fresh
// message of the same type, as a transport does.
func wire[M proto.Message](t testing.TB, m M) M {
	t.Helper()
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("marshal %T: %v", m, err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(raw, out); err != nil {
		t.Fatalf("unmarshal %T: %v", m, err)
	}
	return out
}

// Normalisers: proto3 does not tell a nil map, slice or byte string from an
// empty one, so the wire round trips compare with empties made nil.
func normMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

func normBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func normStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func normRequest(r ExecRequest) ExecRequest {
	r.Stdin, r.Env, r.DshEnv = normBytes(r.Stdin), normMap(r.Env), normMap(r.DshEnv)
	return r
}

func normSpec(s ExecSpec) ExecSpec {
	s.Stdin, s.Env, s.DshEnv = normBytes(s.Stdin), normMap(s.Env), normMap(s.DshEnv)
	return s
}

func normResult(r RunResult) RunResult {
	if r.Sandbox != nil {
		sb := *r.Sandbox
		sb.Enforced, sb.Evidence, sb.NotEnforced = normStrings(sb.Enforced), normStrings(sb.Evidence), normStrings(sb.NotEnforced)
		r.Sandbox = &sb
	}
	return r
}

func TestRequestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		req  ExecRequest
	}{
		{"zero", ExecRequest{}},
		{"full", ExecRequest{
			Command: "echo hi; exit 3", Workdir: "/tmp/x y", TimeoutMs: 1234, Stdin: []byte("in\x00put"),
			Env: map[string]string{"A": "1", "B": ""}, DshEnv: map[string]string{"DSH_X": "b"},
			StdoutMaxBytes: 10, StderrMaxBytes: 20, SandboxMode: SandboxReadOnly, Partition: "session-A",
		}},
		{"command with invalid UTF-8 and NUL", ExecRequest{Command: "printf '\xff\xfe'\x00\xe6\x97"}},
		{"negative and extreme numbers", ExecRequest{Command: "x", TimeoutMs: -1, StdoutMaxBytes: math.MaxInt64, StderrMaxBytes: math.MinInt64}},
		{"empty maps", ExecRequest{Command: "x", Env: map[string]string{}, DshEnv: map[string]string{}, Stdin: []byte{}}},
		{"a terminal", ExecRequest{Command: "bash", Terminal: &Terminal{Rows: 24, Cols: 80}, OpenStdin: true}},
		{"a zero-sized terminal", ExecRequest{Command: "bash", Terminal: &Terminal{}}},
		{"an open stdin", ExecRequest{Command: "cat", OpenStdin: true, Stdin: []byte("first")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requestFromProto(requestToProto(tt.req)); !reflect.DeepEqual(got, tt.req) {
				t.Errorf("in memory: got %+v, want %+v", got, tt.req)
			}
			got := requestFromProto(wire(t, requestToProto(tt.req)))
			if !reflect.DeepEqual(normRequest(got), normRequest(tt.req)) {
				t.Errorf("over the wire: got %+v, want %+v", got, tt.req)
			}
			if got.Command != tt.req.Command {
				t.Errorf("command bytes changed: %q, want %q", got.Command, tt.req.Command)
			}
		})
	}
}

func TestSpecRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		spec ExecSpec
	}{
		{"zero", ExecSpec{}},
		{"full", ExecSpec{
			Command: "ls -la", Workdir: "/home/u", TimeoutMs: 600000, Stdin: []byte{0, 1, 2, 0xff},
			Env: map[string]string{"TERM": "vt100"}, DshEnv: map[string]string{"DSH_A": "1", "DSH_B": "2"},
			StdoutMaxBytes: 30000, StderrMaxBytes: 1 << 20, SandboxMode: SandboxWorkspaceWrite, KillGraceMs: 2000,
			Partition: "session-B",
		}},
		{"invalid UTF-8 command", ExecSpec{Command: "\xc3\x28 \xa0\xa1", KillGraceMs: 1}},
		{"a terminal", ExecSpec{Command: "top", Terminal: &Terminal{Rows: 1000, Cols: 1}, OpenStdin: true, KillGraceMs: 1}},
		{"an open stdin", ExecSpec{Command: "cat", OpenStdin: true, KillGraceMs: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := specFromProto(specToProto(tt.spec)); !reflect.DeepEqual(got, tt.spec) {
				t.Errorf("in memory: got %+v, want %+v", got, tt.spec)
			}
			if got := specFromProto(wire(t, specToProto(tt.spec))); !reflect.DeepEqual(normSpec(got), normSpec(tt.spec)) {
				t.Errorf("over the wire: got %+v, want %+v", got, tt.spec)
			}
		})
	}
}

func TestResultRoundTrip(t *testing.T) {
	invalid := "ok \xff\xfe half \xe6\x97 end \xf0\x9f"
	tests := []struct {
		name string
		res  RunResult
	}{
		{"zero", RunResult{}},
		{"exit 0 is not nil", RunResult{ExitCode: intPtr(0)}},
		{"nonzero exit", RunResult{
			ExitCode: intPtr(3), TimeoutMs: 120000, DurationMs: 42,
			Stdout: CollectedOutput{Text: "hello\n", TotalBytes: 6},
			Stderr: CollectedOutput{Text: "oops", TotalBytes: 4},
		}},
		{"killed by signal", RunResult{
			Signal: "SIGKILL", TimedOut: true, TimeoutMs: 1000, LeftoversKilled: 2,
			Stdout: CollectedOutput{Text: "head\n[... 10 bytes omitted ...]\ntail", TotalBytes: 99, Truncated: true,
				SpillPath: "/tmp/spill/stdout", SpillTruncated: true},
		}},
		{"aborted", RunResult{Signal: "SIGTERM", Aborted: true, AbortReason: "user pressed stop"}},
		{"int32 extremes", RunResult{ExitCode: intPtr(math.MaxInt32), LeftoversKilled: math.MaxInt32}},
		{"negative exit code", RunResult{ExitCode: intPtr(-1)}},
		{"invalid UTF-8 output", RunResult{
			ExitCode: intPtr(1),
			Stdout:   CollectedOutput{Text: invalid, TotalBytes: int64(len(invalid))},
			Stderr:   CollectedOutput{Text: "\x00\x80\xbf", TotalBytes: 3},
		}},
		{"sandbox facts", RunResult{ExitCode: intPtr(1), Sandbox: &SandboxFacts{
			Mode: SandboxReadOnly, Enforced: []string{"landlock", "seccomp"}, LikelyDenial: true,
			NotEnforced: []string{"network denied by a NetworkPolicy"},
			Evidence:    []string{"touch: cannot touch 'x': Permission denied"},
		}}},
		{"sandbox protected paths", RunResult{ExitCode: intPtr(0), Sandbox: &SandboxFacts{
			Mode: SandboxWorkspaceWrite, WritableRoots: []string{"/ws"},
			ProtectedPaths: []string{"/ws/.git/hooks", "/ws/.mcp.json", "/ws/odd\xffname"}, Unprotected: []string{".vscode"},
		}}},
		{"sandbox runner failure", RunResult{Sandbox: &SandboxFacts{Mode: SandboxWorkspaceWrite, RunnerFailure: "landlock unsupported"}}},
		{"empty sandbox facts", RunResult{Sandbox: &SandboxFacts{}}},
		{"interrupted", RunResult{Interrupted: "the session with a pipe ended under the command", DurationMs: 19}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(how string, got RunResult) {
				t.Helper()
				if !reflect.DeepEqual(normResult(got), normResult(tt.res)) {
					t.Errorf("%s: got %+v, want %+v", how, got, tt.res)
				}
				if (got.ExitCode == nil) != (tt.res.ExitCode == nil) {
					t.Errorf("%s: ExitCode nil = %v, want %v", how, got.ExitCode == nil, tt.res.ExitCode == nil)
				}
				if (got.Sandbox == nil) != (tt.res.Sandbox == nil) {
					t.Errorf("%s: Sandbox nil = %v, want %v", how, got.Sandbox == nil, tt.res.Sandbox == nil)
				}
				if got.Stdout.Text != tt.res.Stdout.Text || got.Stderr.Text != tt.res.Stderr.Text {
					t.Errorf("%s: output bytes changed: %q/%q, want %q/%q", how,
						got.Stdout.Text, got.Stderr.Text, tt.res.Stdout.Text, tt.res.Stderr.Text)
				}
			}
			check("in memory", resultFromProto(resultToProto(tt.res)))
			check("over the wire", resultFromProto(wire(t, resultToProto(tt.res))))
		})
	}
}

// The converters do not alias the caller's exit code.
func TestExitCodeNotAliased(t *testing.T) {
	code := 5
	res := resultFromProto(resultToProto(RunResult{ExitCode: &code}))
	code = 6
	if *res.ExitCode != 5 {
		t.Errorf("exit code %d, want 5", *res.ExitCode)
	}
}

func TestProcessExitRoundTrip(t *testing.T) {
	tests := []ProcessExit{
		{},
		{ExitCode: intPtr(0), DurationMs: 1},
		{ExitCode: intPtr(42), DurationMs: 1000},
		{Signal: "SIGTERM", Killed: true, KillReason: "killed by the caller", DurationMs: 5},
		{Killed: true, KillReason: "spawn failed: no such file"},
	}
	for _, e := range tests {
		if got := exitFromProto(exitToProto(e)); !reflect.DeepEqual(got, e) {
			t.Errorf("in memory: got %+v, want %+v", got, e)
		}
		if got := exitFromProto(wire(t, exitToProto(e))); !reflect.DeepEqual(got, e) {
			t.Errorf("over the wire: got %+v, want %+v", got, e)
		}
	}
}

func TestDescribeRoundTrip(t *testing.T) {
	tests := []Description{
		{},
		{Name: "bash-local", Version: "1.2.3", Platform: "linux/amd64", SettingsNamespace: SettingsNamespace,
			SettingsSchema: `{"type":"object"}`, Services: []string{ServiceShell}},
		{Name: "bash-sandbox", SandboxMode: SandboxWorkspaceWrite, Services: []string{"shell", "approval"},
			Uncontained: []string{"abstract unix sockets"}, Shell: "bash",
			Reach: HostReach{Kind: ReachPaths, Paths: []string{"/w", "/tmp/x"}, Workdirs: true}},
		{Name: "ssh", Reach: HostReach{Kind: ReachPaths}},
		{Name: "bash-local", Reach: HostReach{Kind: ReachUser}},
		{Name: "bash-local", Terminals: true, Input: true},
		{Name: "pipes-only", Input: true},
	}
	for _, d := range tests {
		if got := describeFromProto(describeToProto(d)); !reflect.DeepEqual(got, d) {
			t.Errorf("in memory: got %+v, want %+v", got, d)
		}
		got := describeFromProto(wire(t, describeToProto(d)))
		got.Services, d.Services = normStrings(got.Services), normStrings(d.Services)
		if !reflect.DeepEqual(got, d) {
			t.Errorf("over the wire: got %+v, want %+v", got, d)
		}
	}
}

func TestStreamRoundTrip(t *testing.T) {
	for _, s := range []Stream{Stdout, Stderr} {
		if got := streamFromProto(streamToProto(s)); got != s {
			t.Errorf("stream %v came back as %v", s, got)
		}
	}
	if streamToProto(Stdout) == streamToProto(Stderr) {
		t.Error("stdout and stderr map to the same wire value")
	}
	if got := streamToProto(0); got != pb.Stream_STREAM_UNSPECIFIED {
		t.Errorf("unset stream maps to %v", got)
	}
	if got := streamFromProto(pb.Stream_STREAM_UNSPECIFIED); got != 0 {
		t.Errorf("unspecified wire stream maps to %v", got)
	}
}

// FuzzRequestWireRoundTrip sends random requests and specs through the
// converters and the proto encoding. Command, workdir and environment values
// are bytes on the wire and must survive whatever they hold; the sandbox mode,
// the partition and environment keys are proto3 strings, which proto.Marshal refuses when
// they are not valid UTF-8 (the only failure allowed here; the client
// adapter refuses such keys before sending).
func FuzzRequestWireRoundTrip(f *testing.F) {
	f.Add("echo hi", "/tmp", int64(1000), []byte("in"), "K", "v", "DSH_X", "b", int64(10), int64(20), "read-only", int64(2000), true, "s1")
	f.Add("\xff\x00", "", int64(-1), []byte{}, "", "", "", "", int64(0), int64(-5), "", int64(0), false, "")
	f.Fuzz(func(t *testing.T, command, workdir string, timeoutMs int64, stdin []byte,
		envK, envV, dshK, dshV string, outMax, errMax int64, mode string, graceMs int64, withMaps bool, partition string) {
		req := ExecRequest{
			Command: command, Workdir: workdir, TimeoutMs: timeoutMs, Stdin: stdin,
			StdoutMaxBytes: outMax, StderrMaxBytes: errMax, SandboxMode: SandboxMode(mode), Partition: partition,
		}
		if withMaps {
			req.Env = map[string]string{envK: envV, "FIXED": envV + envK}
			req.DshEnv = map[string]string{dshK: dshV}
		}
		validStrings := utf8.ValidString(mode) && utf8.ValidString(partition) && (!withMaps || utf8.ValidString(envK) && utf8.ValidString(dshK))

		if got := requestFromProto(requestToProto(req)); !reflect.DeepEqual(got, req) {
			t.Fatalf("request in memory: got %+v, want %+v", got, req)
		}
		raw, err := proto.Marshal(requestToProto(req))
		if err != nil {
			if validStrings {
				t.Fatalf("marshal request with valid strings: %v", err)
			}
		} else {
			var p pb.ExecRequest
			if err := proto.Unmarshal(raw, &p); err != nil {
				t.Fatalf("unmarshal request: %v", err)
			}
			if got := requestFromProto(&p); !reflect.DeepEqual(normRequest(got), normRequest(req)) {
				t.Fatalf("request over the wire: got %+v, want %+v", got, req)
			}
		}

		spec := ExecSpec{
			Command: req.Command, Workdir: req.Workdir, TimeoutMs: req.TimeoutMs, Stdin: req.Stdin,
			Env: req.Env, DshEnv: req.DshEnv, StdoutMaxBytes: req.StdoutMaxBytes,
			StderrMaxBytes: req.StderrMaxBytes, SandboxMode: req.SandboxMode, KillGraceMs: graceMs, Partition: partition,
		}
		if got := specFromProto(specToProto(spec)); !reflect.DeepEqual(got, spec) {
			t.Fatalf("spec in memory: got %+v, want %+v", got, spec)
		}
		raw, err = proto.Marshal(specToProto(spec))
		if err != nil {
			if validStrings {
				t.Fatalf("marshal spec with valid strings: %v", err)
			}
			return
		}
		var ps pb.ExecSpec
		if err := proto.Unmarshal(raw, &ps); err != nil {
			t.Fatalf("unmarshal spec: %v", err)
		}
		if got := specFromProto(&ps); !reflect.DeepEqual(normSpec(got), normSpec(spec)) {
			t.Fatalf("spec over the wire: got %+v, want %+v", got, spec)
		}
	})
}
