package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// bashTool returns the bash tool over a fresh runtime.
func bashTool(t *testing.T) (*host.BashTool, *host.Runtime) {
	t.Helper()
	r := runtimeOn(t, pluginBin, 0)
	tool, err := host.NewBashTool(context.Background(), r.Shell(), r.Jobs(), host.ApprovalPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	return tool, r
}

func TestBashToolSchemaHasNoEscalationWithoutASandbox(t *testing.T) {
	tool, _ := bashTool(t)
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(tool.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"command", "timeout", "description", "run_in_background"} {
		if schema.Properties[want] == nil {
			t.Errorf("the schema lacks %s", want)
		}
	}
	for _, absent := range []string{"sandbox_permissions", "justification"} {
		if schema.Properties[absent] != nil {
			t.Errorf("bash-local does not sandbox, yet the schema offers %s", absent)
		}
	}
	if len(schema.Required) != 1 || schema.Required[0] != "command" {
		t.Errorf("required %v, want [command]", schema.Required)
	}
}

func TestBashToolRendersForAModel(t *testing.T) {
	tool, _ := bashTool(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, command string
		timeoutMs     int64
		wantBody      string
		wantStatus    pluginapi.ExitStatus
	}{
		{"exit marker", "echo hi; exit 3", 0, "hi", pluginapi.ExitStatus{ExitCode: 3}},
		{"clean exit", "echo fine", 0, "fine", pluginapi.ExitStatus{}},
		{"colours stripped", `printf '\033[31mred\033[0m and \033]0;title\007plain\n'`, 0, "red and plain", pluginapi.ExitStatus{}},
		{"progress redraws kept at their last state", `printf '10%%\r50%%\r100%%\ndone\n'`, 0, "100%\ndone", pluginapi.ExitStatus{}},
		{"stderr marked", "echo out; echo err >&2", 0, "out\n[stderr]\nerr", pluginapi.ExitStatus{}},
		{"timeout noted", "sleep 10", 300, "[timed out after 300 ms; the command and its processes were killed]", pluginapi.ExitStatus{Signal: "SIGTERM"}},
		{"no output: the marker alone", "exit 4", 0, "", pluginapi.ExitStatus{ExitCode: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := tool.Call(ctx, "agent", host.BashInput{Command: tc.command, TimeoutMs: tc.timeoutMs}, host.CallOptions{})
			if err != nil {
				t.Fatal(err)
			}
			body, st := pluginapi.ParseExitStatus(text)
			if body != tc.wantBody || st != tc.wantStatus {
				t.Errorf("rendered %q: body %q status %+v, want %q %+v", text, body, st, tc.wantBody, tc.wantStatus)
			}
		})
	}
}

func TestBashToolNotesTruncationWithTheSpillPath(t *testing.T) {
	tool, _ := bashTool(t)
	text, err := tool.Call(context.Background(), "agent", host.BashInput{Command: "seq 1 100000"}, host.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := pluginapi.ParseExitStatus(text)
	if !strings.Contains(body, "[stdout truncated: 588895 bytes in all; the full output is in /") {
		t.Errorf("no truncation note with the spill path:\n...%s", body[max(0, len(body)-300):])
	}
	if !strings.HasPrefix(body, "1\n2\n3\n") {
		t.Errorf("the head is lost: %q", body[:20])
	}
}

func TestBashToolRunsInTheBackground(t *testing.T) {
	tool, r := bashTool(t)
	ctx := context.Background()
	text, err := tool.Call(ctx, "agent", host.BashInput{Command: "echo from the job", RunInBackground: true}, host.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobs := r.Jobs().List("agent")
	if len(jobs) != 1 || !strings.Contains(text, string(jobs[0].ID)) {
		t.Fatalf("text %q, jobs %+v: want the job id named", text, jobs)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := r.Jobs().Wait(wctx, "agent", jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	if out, _, _ := r.Jobs().Output(ctx, "agent", jobs[0].ID); out.Delta != "from the job\n" {
		t.Errorf("job output %q", out.Delta)
	}
}

func TestBashToolRefusesBadInput(t *testing.T) {
	tool, _ := bashTool(t)
	ctx := context.Background()
	for _, in := range []host.BashInput{
		{},
		{Command: "  "},
		{Command: "true", TimeoutMs: -1},
		{Command: "true", SandboxPermissions: host.RequireEscalated},
	} {
		if _, err := tool.Call(ctx, "agent", in, host.CallOptions{}); !errors.Is(err, host.ErrToolInput) {
			t.Errorf("Call(%+v): %v, want ErrToolInput", in, err)
		}
	}
}

// A result with no output is its marker alone: no blank line before it.
func TestBashToolResultWithoutOutputHasNoBlankLine(t *testing.T) {
	tool, _ := bashTool(t)
	text, err := tool.Call(context.Background(), "agent", host.BashInput{Command: "exit 4"}, host.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if text != "[exit code: 4]" {
		t.Errorf("a command with no output rendered as %q, want %q", text, "[exit code: 4]")
	}
}

// Arguments as a model sends them: a timeout below 1 is refused, as the
// schema's minimum says (0 is not the default: leaving it out is); a
// property the schema lacks is refused.
func TestBashToolArgumentsFollowTheSchema(t *testing.T) {
	tool, _ := bashTool(t)
	ctx := context.Background()
	for _, args := range []string{
		`{"command": "true", "timeout": 0}`,
		`{"command": "true", "timeout": -5}`,
	} {
		var in host.BashInput
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if _, err := tool.Call(ctx, "agent", in, host.CallOptions{}); !errors.Is(err, host.ErrToolInput) || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%s: %v, want ErrToolInput saying at least 1", args, err)
		}
	}
	// The least timeout there is, 1, is taken (the command may well time
	// out: a result, not a refusal).
	var one host.BashInput
	if err := json.Unmarshal([]byte(`{"command": "true", "timeout": 1}`), &one); err != nil {
		t.Fatal(err)
	}
	if _, err := tool.Call(ctx, "agent", one, host.CallOptions{}); err != nil {
		t.Errorf("timeout 1: %v, want it taken", err)
	}
	// A Go caller's negative timeout is refused too, JSON or not.
	if _, err := tool.Call(ctx, "agent", host.BashInput{Command: "true", TimeoutMs: -5}, host.CallOptions{}); !errors.Is(err, host.ErrToolInput) {
		t.Errorf("TimeoutMs -5 from Go: %v, want ErrToolInput", err)
	}
	var in host.BashInput
	if err := json.Unmarshal([]byte(`{"command": "true", "timeoutMs": 5}`), &in); err == nil {
		t.Errorf("an argument the schema lacks decoded: %+v", in)
	}
	for _, args := range []string{`{"command": "echo ok"}`, `{"command": "echo ok", "timeout": null}`, `{"command": "echo ok", "timeout": 1000}`} {
		var in host.BashInput
		if err := json.Unmarshal([]byte(args), &in); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if text, err := tool.Call(ctx, "agent", in, host.CallOptions{}); err != nil || text != "ok" {
			t.Errorf("%s: %q %v", args, text, err)
		}
	}
}

func TestRenderResultSaysWhatTheSandboxDid(t *testing.T) {
	code := 1
	denied := host.RenderResult(pluginapi.RunResult{
		ExitCode: &code,
		Stderr:   pluginapi.CollectedOutput{Text: "touch: cannot touch '/etc/x': Permission denied\n"},
		Sandbox: &pluginapi.SandboxFacts{Mode: pluginapi.SandboxWorkspaceWrite, LikelyDenial: true,
			Evidence: []string{"touch: cannot touch '/etc/x': Permission denied"}},
	})
	if !strings.Contains(denied, "[sandbox workspace-write likely refused this (touch: cannot touch '/etc/x': Permission denied); if the command must do it, ask again with sandbox_permissions: require_escalated") {
		t.Errorf("a likely denial: %q", denied)
	}
	if _, st := pluginapi.ParseExitStatus(denied); st.ExitCode != 1 {
		t.Errorf("the marker after the note: %q", denied)
	}
	planted := host.RenderResult(pluginapi.RunResult{
		ExitCode: &code,
		Sandbox: &pluginapi.SandboxFacts{Mode: pluginapi.SandboxWorkspaceWrite, LikelyDenial: true,
			ProtectedPaths: []string{"/ws/.git", "/ws/.git/hooks", "/ws/.mcp.json"},
			Evidence:       []string{"bash: .git/hooks/pre-commit: Read-only file system"}},
	})
	if !strings.Contains(planted, "/ws/.git, /ws/.git/hooks is protected (hooks and configurations that tools outside the sandbox run, as the user); an escalation (sandbox_permissions: require_escalated) would write it") {
		t.Errorf("a denial at a protected path: %q", planted)
	}
	code = 126
	failed := host.RenderResult(pluginapi.RunResult{
		ExitCode: &code,
		Sandbox:  &pluginapi.SandboxFacts{Mode: pluginapi.SandboxReadOnly, RunnerFailure: "cannot enforce the sandbox read-only: Landlock is not available"},
	})
	if !strings.Contains(failed, "[sandbox read-only: the command did not run: cannot enforce the sandbox read-only: Landlock is not available]") {
		t.Errorf("a runner failure: %q", failed)
	}
	lost := host.RenderResult(pluginapi.RunResult{
		Stdout:  pluginapi.CollectedOutput{Text: "half"},
		Sandbox: &pluginapi.SandboxFacts{Mode: pluginapi.SandboxWorkspaceWrite, Interrupted: "the run's init ended before it reported the command's end"},
	})
	if !strings.Contains(lost, "[sandbox workspace-write: the sandbox lost the command, so how it ended is unknown: the run's init ended") {
		t.Errorf("a run the sandbox lost: %q", lost)
	}
	dropped := host.RenderResult(pluginapi.RunResult{
		Stdout:      pluginapi.CollectedOutput{Text: "half"},
		Interrupted: "the session with ci@build-box ended under the command",
	})
	if !strings.Contains(dropped, "half\n[interrupted: the executor lost the command, so how it ended is unknown: the session with ci@build-box ended") {
		t.Errorf("a run whose executor lost it: %q", dropped)
	}
	quiet := host.RenderResult(pluginapi.RunResult{ExitCode: &code, Sandbox: &pluginapi.SandboxFacts{Mode: pluginapi.SandboxReadOnly}})
	if strings.Contains(quiet, "sandbox") {
		t.Errorf("a run with nothing to say about its sandbox: %q", quiet)
	}
}

// The tool's description and its command property name the mounted
// executor's shell (bash-local: bash).
func TestBashToolNamesTheMountedShell(t *testing.T) {
	tool, _ := bashTool(t)
	if d := tool.Description(); !strings.HasPrefix(d, "Run a bash command") {
		t.Errorf("description %q does not name bash", d)
	}
	var schema struct {
		Properties struct {
			Command struct {
				Description string `json:"description"`
			} `json:"command"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	if d := schema.Properties.Command.Description; d != "The bash command to run." {
		t.Errorf("the command property says %q", d)
	}
}
