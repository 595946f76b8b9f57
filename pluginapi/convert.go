package pluginapi

import (
	"strings"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
)

// Conversions between the Go vocabulary and the wire messages. Each pair is
// an exact inverse; the fuzz and round-trip tests hold them to it.

func describeToProto(d Description) *pb.DescribeResponse {
	return &pb.DescribeResponse{
		Name: d.Name, Version: d.Version, Platform: d.Platform,
		SandboxMode: string(d.SandboxMode), SettingsNamespace: d.SettingsNamespace,
		SettingsSchema: d.SettingsSchema, Services: d.Services, Uncontained: d.Uncontained, Shell: d.Shell,
		HostReach: reachToProto(d.Reach), Terminals: d.Terminals, Input: d.Input,
	}
}

func describeFromProto(p *pb.DescribeResponse) Description {
	return Description{
		Name: p.GetName(), Version: p.GetVersion(), Platform: p.GetPlatform(),
		SandboxMode: SandboxMode(p.GetSandboxMode()), SettingsNamespace: p.GetSettingsNamespace(),
		SettingsSchema: p.GetSettingsSchema(), Services: p.GetServices(), Uncontained: p.GetUncontained(), Shell: p.GetShell(),
		Reach: reachFromProto(p.GetHostReach()), Terminals: p.GetTerminals(), Input: p.GetInput(),
	}
}

func reachToProto(r HostReach) *pb.HostReach {
	var kind pb.HostReach_Kind
	switch r.Kind {
	case ReachUndeclared:
		return nil
	case ReachPaths:
		kind = pb.HostReach_KIND_PATHS
	case ReachUser:
		kind = pb.HostReach_KIND_USER
	}
	paths := make([][]byte, len(r.Paths))
	for i, p := range r.Paths {
		paths[i] = []byte(p)
	}
	return &pb.HostReach{Kind: kind, Paths: paths, Workdirs: r.Workdirs}
}

func reachFromProto(p *pb.HostReach) HostReach {
	var r HostReach
	switch p.GetKind() {
	case pb.HostReach_KIND_PATHS:
		r.Kind = ReachPaths
	case pb.HostReach_KIND_USER:
		r.Kind = ReachUser
	default:
		return HostReach{}
	}
	for _, b := range p.GetPaths() {
		r.Paths = append(r.Paths, string(b))
	}
	r.Workdirs = p.GetWorkdirs()
	return r
}

func requestToProto(r ExecRequest) *pb.ExecRequest {
	return &pb.ExecRequest{
		Command: []byte(r.Command), Workdir: []byte(r.Workdir), TimeoutMs: r.TimeoutMs, Stdin: r.Stdin,
		Env: envToProto(r.Env), DshEnv: envToProto(r.DshEnv), StdoutMaxBytes: r.StdoutMaxBytes, StderrMaxBytes: r.StderrMaxBytes,
		SandboxMode: string(r.SandboxMode), Partition: r.Partition,
		Terminal: terminalToProto(r.Terminal), OpenStdin: r.OpenStdin,
	}
}

func requestFromProto(p *pb.ExecRequest) ExecRequest {
	return ExecRequest{
		Command: string(p.GetCommand()), Workdir: string(p.GetWorkdir()), TimeoutMs: p.GetTimeoutMs(),
		Stdin: p.GetStdin(), Env: envFromProto(p.GetEnv()), DshEnv: envFromProto(p.GetDshEnv()),
		StdoutMaxBytes: p.GetStdoutMaxBytes(), StderrMaxBytes: p.GetStderrMaxBytes(),
		SandboxMode: SandboxMode(p.GetSandboxMode()), Partition: p.GetPartition(),
		Terminal: terminalFromProto(p.GetTerminal()), OpenStdin: p.GetOpenStdin(),
	}
}

func specToProto(s ExecSpec) *pb.ExecSpec {
	return &pb.ExecSpec{
		Command: []byte(s.Command), Workdir: []byte(s.Workdir), TimeoutMs: s.TimeoutMs, Stdin: s.Stdin,
		Env: envToProto(s.Env), DshEnv: envToProto(s.DshEnv), StdoutMaxBytes: s.StdoutMaxBytes, StderrMaxBytes: s.StderrMaxBytes,
		SandboxMode: string(s.SandboxMode), KillGraceMs: s.KillGraceMs, Partition: s.Partition,
		Terminal: terminalToProto(s.Terminal), OpenStdin: s.OpenStdin,
	}
}

func specFromProto(p *pb.ExecSpec) ExecSpec {
	return ExecSpec{
		Command: string(p.GetCommand()), Workdir: string(p.GetWorkdir()), TimeoutMs: p.GetTimeoutMs(),
		Stdin: p.GetStdin(), Env: envFromProto(p.GetEnv()), DshEnv: envFromProto(p.GetDshEnv()),
		StdoutMaxBytes: p.GetStdoutMaxBytes(), StderrMaxBytes: p.GetStderrMaxBytes(),
		SandboxMode: SandboxMode(p.GetSandboxMode()), KillGraceMs: p.GetKillGraceMs(), Partition: p.GetPartition(),
		Terminal: terminalFromProto(p.GetTerminal()), OpenStdin: p.GetOpenStdin(),
	}
}

// terminalToProto carries a terminal's size; a size the wire cannot carry
// (negative, or past uint32) goes as 0, which Resolve refuses.
func terminalToProto(t *Terminal) *pb.Terminal {
	if t == nil {
		return nil
	}
	return &pb.Terminal{Rows: sizeToProto(t.Rows), Cols: sizeToProto(t.Cols)}
}

func terminalFromProto(p *pb.Terminal) *Terminal {
	if p == nil {
		return nil
	}
	return &Terminal{Rows: sizeFromProto(p.GetRows()), Cols: sizeFromProto(p.GetCols())}
}

func sizeToProto(n int) uint32 {
	if n < 0 || int64(n) > int64(^uint32(0)) {
		return 0
	}
	return uint32(n)
}

// sizeFromProto is n; past a 32-bit int's range it turns negative, which
// Resolve refuses as it refuses any size out of bounds.
func sizeFromProto(n uint32) int { return int(n) }

func outputToProto(o CollectedOutput) *pb.CollectedOutput {
	return &pb.CollectedOutput{
		Text: []byte(o.Text), TotalBytes: o.TotalBytes, Truncated: o.Truncated,
		SpillPath: o.SpillPath, SpillTruncated: o.SpillTruncated,
		SpillError: strings.ToValidUTF8(o.SpillError, "\uFFFD"),
	}
}

func outputFromProto(p *pb.CollectedOutput) CollectedOutput {
	return CollectedOutput{
		Text: string(p.GetText()), TotalBytes: p.GetTotalBytes(), Truncated: p.GetTruncated(),
		SpillPath: p.GetSpillPath(), SpillTruncated: p.GetSpillTruncated(), SpillError: p.GetSpillError(),
	}
}

func sandboxToProto(s *SandboxFacts) *pb.SandboxFacts {
	if s == nil {
		return nil
	}
	return &pb.SandboxFacts{
		Mode: string(s.Mode), Enforced: s.Enforced, LikelyDenial: s.LikelyDenial,
		Evidence: linesToProto(s.Evidence), RunnerFailure: s.RunnerFailure,
		WritableRoots: linesToProto(s.WritableRoots), Limits: s.Limits, LimitsReached: s.LimitsReached, Interrupted: s.Interrupted,
		ProtectedPaths: linesToProto(s.ProtectedPaths), Unprotected: s.Unprotected, NotEnforced: s.NotEnforced,
	}
}

func sandboxFromProto(p *pb.SandboxFacts) *SandboxFacts {
	if p == nil {
		return nil
	}
	return &SandboxFacts{
		Mode: SandboxMode(p.GetMode()), Enforced: p.GetEnforced(), LikelyDenial: p.GetLikelyDenial(),
		Evidence: linesFromProto(p.GetEvidence()), RunnerFailure: p.GetRunnerFailure(),
		WritableRoots: linesFromProto(p.GetWritableRoots()), Limits: p.GetLimits(), LimitsReached: p.GetLimitsReached(), Interrupted: p.GetInterrupted(),
		ProtectedPaths: linesFromProto(p.GetProtectedPaths()), Unprotected: p.GetUnprotected(), NotEnforced: p.GetNotEnforced(),
	}
}

func exitCodeToProto(c *int) *int64 {
	if c == nil {
		return nil
	}
	v := int64(*c)
	return &v
}

func exitCodeFromProto(c *int64) *int {
	if c == nil {
		return nil
	}
	v := int(*c)
	return &v
}

func resultToProto(r RunResult) *pb.RunResult {
	return &pb.RunResult{
		ExitCode: exitCodeToProto(r.ExitCode), Signal: r.Signal, TimedOut: r.TimedOut,
		Aborted: r.Aborted, AbortReason: r.AbortReason, TimeoutMs: r.TimeoutMs,
		Stdout: outputToProto(r.Stdout), Stderr: outputToProto(r.Stderr), DurationMs: r.DurationMs,
		Sandbox: sandboxToProto(r.Sandbox), LeftoversKilled: int32(r.LeftoversKilled), Interrupted: r.Interrupted,
	}
}

func resultFromProto(p *pb.RunResult) RunResult {
	if p == nil {
		return RunResult{}
	}
	return RunResult{
		ExitCode: exitCodeFromProto(p.ExitCode), Signal: p.GetSignal(), TimedOut: p.GetTimedOut(),
		Aborted: p.GetAborted(), AbortReason: p.GetAbortReason(), TimeoutMs: p.GetTimeoutMs(),
		Stdout: outputFromProto(p.GetStdout()), Stderr: outputFromProto(p.GetStderr()),
		DurationMs: p.GetDurationMs(), Sandbox: sandboxFromProto(p.GetSandbox()),
		LeftoversKilled: int(p.GetLeftoversKilled()), Interrupted: p.GetInterrupted(),
	}
}

func exitToProto(e ProcessExit) *pb.ProcessExit {
	return &pb.ProcessExit{
		ExitCode: exitCodeToProto(e.ExitCode), Signal: e.Signal, Killed: e.Killed,
		KillReason: e.KillReason, DurationMs: e.DurationMs,
	}
}

func exitFromProto(p *pb.ProcessExit) ProcessExit {
	if p == nil {
		return ProcessExit{}
	}
	return ProcessExit{
		ExitCode: exitCodeFromProto(p.ExitCode), Signal: p.GetSignal(), Killed: p.GetKilled(),
		KillReason: p.GetKillReason(), DurationMs: p.GetDurationMs(),
	}
}

func streamToProto(s Stream) pb.Stream {
	switch s {
	case Stdout:
		return pb.Stream_STREAM_STDOUT
	case Stderr:
		return pb.Stream_STREAM_STDERR
	}
	return pb.Stream_STREAM_UNSPECIFIED
}

func streamFromProto(s pb.Stream) Stream {
	switch s {
	case pb.Stream_STREAM_STDOUT:
		return Stdout
	case pb.Stream_STREAM_STDERR:
		return Stderr
	}
	return 0
}

func envToProto(env map[string]string) map[string][]byte {
	if env == nil {
		return nil
	}
	out := make(map[string][]byte, len(env))
	for k, v := range env {
		out[k] = []byte(v)
	}
	return out
}

func envFromProto(env map[string][]byte) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = string(v)
	}
	return out
}

func linesToProto(lines []string) [][]byte {
	if lines == nil {
		return nil
	}
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = []byte(l)
	}
	return out
}

func linesFromProto(lines [][]byte) []string {
	if lines == nil {
		return nil
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l)
	}
	return out
}
