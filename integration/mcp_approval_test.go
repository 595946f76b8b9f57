package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// escalate asks for `touch MARK; echo $SANDBOX_MODE_GRANTED` outside the
// sandbox, and returns the text and whether the command ran.
func escalate(t *testing.T, cs *mcp.ClientSession) (text string, isError, ran bool) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "ran")
	text, isError = call(t, cs, "bash", map[string]any{
		"command":             "touch " + mark + "; echo $SANDBOX_MODE_GRANTED",
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
	cs, _ := mcpClientSession(t, scenario(t), mcpClient{}, "--executor", bins.standIn)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "bash" {
			continue
		}
		raw, _ := json.Marshal(tool.InputSchema)
		for _, field := range []string{`"sandbox_permissions"`, `"justification"`, `"require_escalated"`} {
			if !strings.Contains(string(raw), field) {
				t.Errorf("the bash schema under a sandboxing executor lacks %s: %s", field, raw)
			}
		}
		return
	}
	t.Fatal("no bash tool")
}

func TestMCPEscalationApprovedRuns(t *testing.T) {
	for _, protocol := range []string{"", legacyProtocol} {
		t.Run("protocol "+protocol, func(t *testing.T) {
			var asked atomic.Int32
			c := answering("accept", true, &asked)
			c.protocol = protocol
			cs, _ := mcpClientSession(t, scenario(t), c, "--executor", bins.standIn)
			text, isError, ran := escalate(t, cs)
			if isError || !ran || text != "danger-full-access" || asked.Load() != 1 {
				t.Errorf("text %q error %v ran %v asked %d: want it run once approved, in danger-full-access", text, isError, ran, asked.Load())
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
			args := []string{"--executor", bins.standIn}
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
			cs, _ := mcpClientSession(t, scenario(t), c, "--executor", bins.standIn, "--settings", settings)
			text, isError, ran := escalate(t, cs)
			if ran || !isError || !strings.Contains(text, "no answer within 300ms") {
				t.Errorf("text %q error %v ran %v: want a denial for want of an answer", text, isError, ran)
			}
		})
	}
}

func TestMCPUseDefaultRunsSandboxed(t *testing.T) {
	var asked atomic.Int32
	cs, _ := mcpClientSession(t, scenario(t), answering("accept", true, &asked), "--executor", bins.standIn)
	text, isError := call(t, cs, "bash", map[string]any{"command": "echo $SANDBOX_MODE_GRANTED", "sandbox_permissions": "use_default"})
	if isError || text != "default" || asked.Load() != 0 {
		t.Errorf("text %q error %v asked %d: want it run in the default mode without asking", text, isError, asked.Load())
	}
}

func TestMCPApprovalSettingsChecked(t *testing.T) {
	settings := settingsFile(t, "approval:\n  escalation: sometimes\n")
	r := dsh(t, scenario(t), "mcp", "--settings", settings)
	if r.code == 0 || !strings.Contains(r.stderr, settings+":2: approval.escalation") {
		t.Errorf("exit %d, stderr %q: want the bad value named with its line", r.code, r.stderr)
	}
}
