package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// The protocol version before multi round-trip requests: there the server
// asks the client for elicitation directly, within the call.
const legacyProtocol = "2025-11-25"

// answering is a client whose user answers every escalation question with
// action (and approve, for "accept"), counting the questions.
func answering(action string, approve bool, asked *atomic.Int32) mcpClient {
	return mcpClient{options: mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if !strings.Contains(req.Params.Message, "outside the sandbox") {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			res := &mcp.ElicitResult{Action: action}
			if action == "accept" {
				res.Content = map[string]any{"approve": approve}
			}
			return res, nil
		},
	}}
}

// escalate asks bash-sandbox to create a file outside its workspace (the
// test's directory), which only an approved escalation can; it returns the
// text and whether the file was made.
func escalate(t *testing.T, cs *mcp.ClientSession) (text string, isError, ran bool) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "ran")
	text, isError = call(t, cs, "bash", map[string]any{
		"command":             "touch " + mark + " && echo made",
		"sandbox_permissions": "require_escalated",
		"justification":       "it writes outside the workspace",
	})
	_, err := os.Stat(mark)
	return text, isError, err == nil
}

func settingsFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMCPOffersEscalationUnderASandbox(t *testing.T) {
	cs, _ := mcpClientSession(t, scenario(t), mcpClient{}, "--executor", "bash-sandbox")
	raw := bashSchema(t, cs)
	for _, field := range escalationFields {
		if !strings.Contains(raw, field) {
			t.Errorf("the bash schema under a sandboxing executor lacks %s: %s", field, raw)
		}
	}
}

// escalationFields are what the bash schema holds when it offers escalation.
var escalationFields = []string{`"sandbox_permissions"`, `"justification"`, `"require_escalated"`}

// bashSchema is the bash tool's input schema, as JSON.
func bashSchema(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "bash" {
			raw, _ := json.Marshal(tool.InputSchema)
			return string(raw)
		}
	}
	t.Fatal("no bash tool")
	return ""
}

func TestMCPEscalationApprovedRuns(t *testing.T) {
	for _, protocol := range []string{"", legacyProtocol} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			var asked atomic.Int32
			c := answering("accept", true, &asked)
			c.protocol = protocol
			cs, _ := mcpClientSession(t, scenario(t), c, "--executor", "bash-sandbox")
			text, isError, ran := escalate(t, cs)
			if isError || !ran || text != "made" || asked.Load() != 1 {
				t.Errorf("text %q error %v ran %v asked %d: want it run outside the sandbox once approved", text, isError, ran, asked.Load())
			}
		})
	}
}

func TestMCPEscalationDenied(t *testing.T) {
	for _, tc := range []struct {
		name     string
		client   func(*atomic.Int32) mcpClient
		settings string
		wantAsk  int32
		wantWhy  string
	}{
		{"declined", func(a *atomic.Int32) mcpClient { return answering("decline", false, a) }, "", 1, "the approver said no"},
		{"cancelled", func(a *atomic.Int32) mcpClient { return answering("cancel", false, a) }, "", 1, "the approver said no"},
		{"accepted without approve", func(a *atomic.Int32) mcpClient { return answering("accept", false, a) }, "", 1, "the approver said no"},
		{"no elicitation", func(*atomic.Int32) mcpClient { return mcpClient{} }, "", 0, "offers no elicitation"},
		{"policy deny", func(a *atomic.Int32) mcpClient { return answering("accept", true, a) }, "approval:\n  escalation: deny\n", 0, "the approval policy refuses escalation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			args := []string{"--executor", "bash-sandbox"}
			if tc.settings != "" {
				args = append(args, "--settings", settingsFile(t, tc.settings))
			}
			cs, _ := mcpClientSession(t, scenario(t), tc.client(&asked), args...)
			text, isError, ran := escalate(t, cs)
			if ran || !isError || !strings.Contains(text, "escalation denied") || !strings.Contains(text, tc.wantWhy) {
				t.Errorf("text %q error %v ran %v: want a denial saying %q, and nothing run", text, isError, ran, tc.wantWhy)
			}
			if asked.Load() != tc.wantAsk {
				t.Errorf("the user was asked %d times, want %d", asked.Load(), tc.wantAsk)
			}
		})
	}
}

// A user who does not answer within approval.timeoutMs is a denial, on
// either protocol.
func TestMCPEscalationUnanswered(t *testing.T) {
	for _, protocol := range []string{"", legacyProtocol} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			c := mcpClient{protocol: protocol, options: mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					select { // the user walks away, then comes back and says yes
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			}}
			settings := settingsFile(t, "approval:\n  timeoutMs: 300\n")
			cs, _ := mcpClientSession(t, scenario(t), c, "--executor", "bash-sandbox", "--settings", settings)
			text, isError, ran := escalate(t, cs)
			if ran || !isError || !strings.Contains(text, "no answer within 300ms") {
				t.Errorf("text %q error %v ran %v: want a denial for want of an answer", text, isError, ran)
			}
		})
	}
}

func TestMCPUseDefaultRunsSandboxed(t *testing.T) {
	var asked atomic.Int32
	cs, _ := mcpClientSession(t, scenario(t), answering("accept", true, &asked), "--executor", "bash-sandbox")
	mark := filepath.Join(t.TempDir(), "ran")
	text, isError := call(t, cs, "bash", map[string]any{"command": "touch " + mark, "sandbox_permissions": "use_default"})
	if _, err := os.Stat(mark); err == nil || isError || asked.Load() != 0 {
		t.Errorf("error %v asked %d, the file made: want it run in the sandbox without asking", isError, asked.Load())
	}
	body, st := pluginapi.ParseExitStatus(text)
	if st.ExitCode != 1 || !refused.MatchString(body) ||
		!strings.Contains(body, "[sandbox workspace-write likely refused this") {
		t.Errorf("the model is not told the sandbox refused: %q", text)
	}
}

func TestMCPApprovalSettingsChecked(t *testing.T) {
	settings := settingsFile(t, "approval:\n  escalation: sometimes\n")
	r := dsh(t, scenario(t), "mcp", "--settings", settings)
	if r.code == 0 || !strings.Contains(r.stderr, settings+":2: approval.escalation") {
		t.Errorf("exit %d, stderr %q: want the bad value named with its line", r.code, r.stderr)
	}
}

// A client that answers input requests by hand (multi round-trip turned off
// in the SDK) cannot get a command run with an answer that is forged,
// replayed, carried to another command, or not the boolean true.
func TestMCPEscalationAnswersAreCheckedOnRetry(t *testing.T) {
	stdioOnly(t, "the retries it checks are the 2026-07-28 protocol's, which is not served over HTTP (it has no sessions there)")
	c := mcpClient{options: mcp.ClientOptions{
		// Advertise elicitation; the test answers the requests itself.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked this way")
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	}}
	cs, _ := mcpClientSession(t, scenario(t), c, "--executor", "bash-sandbox")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	mark := filepath.Join(t.TempDir(), "ran")
	args := func(command string) map[string]any {
		return map[string]any{"command": command, "sandbox_permissions": "require_escalated"}
	}
	ask := func(command string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: args(command)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.NeedsInput() || res.RequestState == "" || res.InputRequests["approve_escalation"] == nil {
			t.Fatalf("no question came back: %+v", res)
		}
		return res.RequestState
	}
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	answer := func(command, state string, resp mcp.InputResponse) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: "bash", Arguments: args(command), RequestState: state,
			InputResponses: mcp.InputResponseMap{"approve_escalation": resp},
		})
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return text, res.IsError
	}
	touch := "touch " + mark
	for _, tc := range []struct {
		name    string
		answer  func() (string, bool)
		wantWhy string
	}{
		{"forged state", func() (string, bool) { ask(touch); return answer(touch, "made-up", yes) }, "no open question"},
		{"another command", func() (string, bool) { return answer(touch, ask("true"), yes) }, "another command"},
		{"approve as a string", func() (string, bool) {
			return answer(touch, ask(touch), &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": "true"}})
		}, "the approver said no"},
		{"not an elicitation", func() (string, bool) { return answer(touch, ask(touch), &mcp.ListRootsResult{}) }, "not an elicitation result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, isError := tc.answer()
			if !isError || !strings.Contains(text, "escalation denied") || !strings.Contains(text, tc.wantWhy) {
				t.Errorf("text %q error %v: want a denial saying %q", text, isError, tc.wantWhy)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
	// The honest answer works, once.
	state := ask(touch)
	if text, isError := answer(touch, state, yes); isError || text != "" {
		t.Fatalf("approved: %q error %v", text, isError)
	}
	if _, err := os.Stat(mark); err != nil {
		t.Fatal("the approved command did not run")
	}
	os.Remove(mark)
	if text, isError := answer(touch, state, yes); !isError || !strings.Contains(text, "no open question") {
		t.Errorf("a replayed answer: %q error %v", text, isError)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("a replayed answer ran the command again")
	}
}

// With approval.escalation: deny, the bash tool offers no escalation: its
// schema has neither sandbox_permissions nor justification, and the note
// on a likely denial does not tell the model to ask for one, for a path
// outside the workspace or a protected one inside it.
func TestMCPOffersNoEscalationThePolicyDenies(t *testing.T) {
	tag := scenario(t)
	cs, _ := mcpClientSession(t, tag, mcpClient{}, "--executor", "bash-sandbox", "--workdir", t.TempDir(),
		"--settings", settingsFile(t, "approval:\n  escalation: deny\n"))
	raw := bashSchema(t, cs)
	for _, field := range escalationFields {
		if strings.Contains(raw, field) {
			t.Errorf("escalation is denied by policy, yet the bash schema offers %s: %s", field, raw)
		}
	}
	outside := "/usr/dsh-denied-" + tag
	t.Cleanup(func() { _ = os.Remove(outside) })
	for _, command := range []string{"touch " + outside, "echo x > .mcp.json"} {
		text, _ := call(t, cs, "bash", map[string]any{"command": command})
		if !strings.Contains(text, "likely refused this") || !strings.Contains(text, "escalation is off") {
			t.Errorf("%s: %q; want a likely denial, and escalation said to be off", command, text)
		}
		if strings.Contains(text, "sandbox_permissions") || strings.Contains(text, "require_escalated") {
			t.Errorf("%s: %q: escalation is denied by policy, yet the note offers it", command, text)
		}
	}
}
