package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// Over MCP the approver of an escalation is the client's user, asked
// through elicitation. Before protocol 2026-07-28 the server asks the client
// directly, within the call; from that version on the call returns the
// question as an input request, and the client answers in a retry of the
// call, echoing the request state this server issued for that exact input.
const (
	multiRoundTripVersion = "2026-07-28"
	approvalInputID       = "approve_escalation"
	// maxPendingApprovals bounds the questions awaiting a retry; the oldest
	// is forgotten first (its answer is then refused).
	maxPendingApprovals = 256
)

// errAskedClient: the question went back to the client, to be answered in a
// retry; nothing ran.
var errAskedClient = errors.New("asked the client; the answer comes with a retry of the call")

// approvals issues and redeems the questions of multi round-trip
// escalations: each is good for one answer, to the input it was asked
// about, within the policy's time.
type approvals struct {
	timeout time.Duration
	mu      sync.Mutex
	pending map[string]pendingApproval
	order   []string
}

type pendingApproval struct {
	input  string
	issued time.Time
}

func newApprovals(policy host.ApprovalPolicy) *approvals {
	return &approvals{timeout: policy.Timeout(), pending: map[string]pendingApproval{}}
}

// inputKey identifies a call's input: an answer applies to that input only.
func inputKey(in host.BashInput) string {
	b, _ := json.Marshal(in)
	return string(b)
}

// issue records a question about in and returns the state that names it.
// Questions past their time go first; past the bound, the oldest.
func (a *approvals) issue(in host.BashInput) string {
	state := rand.Text()
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.order) > 0 {
		p, ok := a.pending[a.order[0]]
		if ok && now.Sub(p.issued) <= a.timeout && len(a.order) < maxPendingApprovals {
			break
		}
		delete(a.pending, a.order[0])
		a.order = a.order[1:]
	}
	a.pending[state] = pendingApproval{input: inputKey(in), issued: now}
	a.order = append(a.order, state)
	return state
}

// redeem takes the answer to the question state names, once, for in only.
func (a *approvals) redeem(state string, in host.BashInput) error {
	a.mu.Lock()
	p, ok := a.pending[state]
	delete(a.pending, state)
	a.mu.Unlock()
	switch {
	case !ok:
		return errors.New("the answer is to no open question (unknown, already answered, or forgotten)")
	case p.input != inputKey(in):
		return errors.New("the answer is to a question about another command")
	case time.Since(p.issued) > a.timeout:
		return fmt.Errorf("no answer within %v", a.timeout)
	}
	return nil
}

// approver is the approver of one bash call.
func (a *approvals) approver(req *mcp.CallToolRequest, in host.BashInput) *approvalAsk {
	return &approvalAsk{approvals: a, req: req, in: in}
}

// approvalAsk asks about one call's escalation. When the question must go
// back to the client, pending is the result that carries it.
type approvalAsk struct {
	approvals *approvals
	req       *mcp.CallToolRequest
	in        host.BashInput
	pending   *mcp.CallToolResult
}

// ApproveEscalation implements host.Approver.
func (k *approvalAsk) ApproveEscalation(ctx context.Context, er host.EscalationRequest) (bool, error) {
	if caps := k.req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return false, errors.New("the MCP client cannot ask its user (it offers no elicitation)")
	}
	params := escalationQuestion(er)
	if !multiRoundTrip(k.req.Session) {
		res, err := k.req.Session.Elicit(ctx, params)
		if err != nil {
			return false, err
		}
		return approved(res), nil
	}
	if resp, ok := k.req.Params.InputResponses[approvalInputID]; ok {
		if err := k.approvals.redeem(k.req.Params.RequestState, k.in); err != nil {
			return false, err
		}
		// Unlike Elicit, the SDK does not check an input response against
		// the schema asked for: approved is the check.
		res, ok := resp.(*mcp.ElicitResult)
		if !ok {
			return false, fmt.Errorf("the answer is a %T, not an elicitation result", resp)
		}
		return approved(res), nil
	}
	k.pending = &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{approvalInputID: params},
		RequestState:  k.approvals.issue(k.in),
	}
	return false, errAskedClient
}

// multiRoundTrip says whether the session's client answers input requests
// in retries: the same test the SDK makes (protocol 2026-07-28 or later).
func multiRoundTrip(ss *mcp.ServerSession) bool {
	if ip := ss.InitializeParams(); ip != nil {
		return ip.ProtocolVersion >= multiRoundTripVersion
	}
	return true
}

// escalationQuestion is the form the user sees: what the agent claims,
// labelled as its claim, then the command itself in a fenced block at the
// end, where the agent's words cannot pose as it; then one yes/no field.
func escalationQuestion(er host.EscalationRequest) *mcp.ElicitParams {
	msg := fmt.Sprintf("The agent asks to run a command outside the sandbox (%s), with %s.\n", er.Mode, er.Target)
	if er.Justification != "" {
		msg += "\nThe agent's reason: " + oneLine(er.Justification) + "\n"
	}
	if er.Description != "" {
		msg += "The agent's description: " + oneLine(er.Description) + "\n"
	}
	command := printable(er.Command)
	fence := "```"
	for strings.Contains(command, fence) {
		fence += "`"
	}
	msg += "\nThe command:\n" + fence + "\n" + command + "\n" + fence
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean",` +
			`"title":"Run it outside the sandbox","default":false}},"required":["approve"]}`),
	}
}

// printable is s without what could disguise it on a screen: terminal
// escapes, control characters other than newline and tab, and bidirectional
// overrides.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.IsControl(r), unicode.Is(unicode.Bidi_Control, r):
			return -1
		}
		return r
	}, host.CleanOutput(s))
}

// oneLine is printable(s) on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(printable(s)), " ")
}

// approved: only an accepted form with approve set to the boolean true is
// a yes.
func approved(res *mcp.ElicitResult) bool {
	if res == nil || res.Action != "accept" {
		return false
	}
	yes, _ := res.Content["approve"].(bool)
	return yes
}
