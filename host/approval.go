package host

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// EscalationTarget is the mode an approved escalation runs in: outside the
// sandbox.
const EscalationTarget = pluginapi.SandboxDangerFullAccess

// EscalationRequest is what an approver is asked: may this command run
// outside the sandbox?
type EscalationRequest struct {
	Owner         string
	Command       string
	Description   string
	Justification string
	// Mode is the executor's confinement; Target the one asked for.
	Mode   pluginapi.SandboxMode
	Target pluginapi.SandboxMode
}

// Approver is the approval service (ctx.approval): a person, or a policy
// acting for one, deciding an escalation. An error, like a false answer,
// denies it.
type Approver interface {
	ApproveEscalation(ctx context.Context, req EscalationRequest) (bool, error)
}

// ApproverFunc adapts a function to Approver.
type ApproverFunc func(ctx context.Context, req EscalationRequest) (bool, error)

// ApproveEscalation calls f.
func (f ApproverFunc) ApproveEscalation(ctx context.Context, req EscalationRequest) (bool, error) {
	return f(ctx, req)
}

// The escalation policies.
const (
	// EscalationAsk asks the approver (the default).
	EscalationAsk = "ask"
	// EscalationDeny refuses every escalation without asking.
	EscalationDeny = "deny"
)

// DefaultApprovalTimeout is how long an approver has to answer.
const DefaultApprovalTimeout = 2 * time.Minute

// ApprovalPolicy is the approval section of the settings.
type ApprovalPolicy struct {
	// Escalation is EscalationAsk or EscalationDeny.
	Escalation string `json:"escalation,omitempty"`
	// TimeoutMs bounds the wait for an answer; no answer in time is a
	// denial.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// ApprovalSchema is the JSON Schema of the approval section.
const ApprovalSchema = `{
  "type": "object",
  "properties": {
    "escalation": {"type": "string", "enum": ["ask", "deny"], "default": "ask",
      "description": "ask: a require_escalated call asks the approver (over MCP, the client's user through elicitation); deny: refused without asking"},
    "timeoutMs": {"type": "integer", "minimum": 1, "default": 120000,
      "description": "how long to wait for an answer; no answer is a denial"}
  },
  "additionalProperties": false
}`

// ParseApprovalPolicy reads the approval section (JSON, as
// SettingsFile.Section returns it; empty means every default).
func ParseApprovalPolicy(raw []byte) (ApprovalPolicy, error) {
	var p ApprovalPolicy
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return ApprovalPolicy{}, fmt.Errorf("%w: approval: %v", ErrSettings, err)
		}
	}
	switch p.Escalation {
	case "":
		p.Escalation = EscalationAsk
	case EscalationAsk, EscalationDeny:
	default:
		return ApprovalPolicy{}, fmt.Errorf("%w: approval.escalation: %q is neither %q nor %q", ErrSettings, p.Escalation, EscalationAsk, EscalationDeny)
	}
	if p.TimeoutMs < 0 {
		return ApprovalPolicy{}, fmt.Errorf("%w: approval.timeoutMs: %d is negative", ErrSettings, p.TimeoutMs)
	}
	return p, nil
}

// Timeout is how long an approver has to answer under p.
func (p ApprovalPolicy) Timeout() time.Duration {
	if p.TimeoutMs > 0 {
		return time.Duration(p.TimeoutMs) * time.Millisecond
	}
	return DefaultApprovalTimeout
}

// approve runs the fail-closed sequence: the policy first, then the
// approver, bounded by the policy's timeout. Only a yes in time lets the
// escalation through; anything else is ErrEscalationDenied, saying why.
func (p ApprovalPolicy) approve(ctx context.Context, a Approver, req EscalationRequest) error {
	if p.Escalation == EscalationDeny {
		return fmt.Errorf("%w: the approval policy refuses escalation", ErrEscalationDenied)
	}
	if a == nil {
		return fmt.Errorf("%w: no approver is configured", ErrEscalationDenied)
	}
	actx, cancel := context.WithTimeout(ctx, p.Timeout())
	defer cancel()
	ok, err := a.ApproveEscalation(actx, req)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%w: %w", ErrEscalationDenied, ctx.Err())
	case actx.Err() != nil:
		// Late, even if it is a yes.
		return fmt.Errorf("%w: no answer within %v", ErrEscalationDenied, p.Timeout())
	case err != nil:
		return fmt.Errorf("%w: %w", ErrEscalationDenied, err)
	case !ok:
		return fmt.Errorf("%w: the approver said no", ErrEscalationDenied)
	}
	return nil
}
