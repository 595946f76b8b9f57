package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// screenWords is what job_output's description says of screen, when the
// executor offers terminals.
func screenWords(terminals bool) string {
	if !terminals {
		return ""
	}
	return " For a job started with tty, screen: true returns its terminal's screen instead, as text, with the cursor's place."
}

// jobOutputSchema is job_output's input schema; screen only when the
// executor offers terminals.
func jobOutputSchema(terminals bool) json.RawMessage {
	props := map[string]any{
		"job_id":  map[string]any{"type": "string"},
		"wait_ms": map[string]any{"type": "integer", "minimum": 0, "maximum": maxWaitMs},
	}
	if terminals {
		props["screen"] = map[string]any{"type": "boolean", "description": "For a job started with tty: return the terminal's screen as it is now (what a person would see: the rows of a full-screen program such as top, less or vim, or the last lines of a shell), " +
			"then a line with the cursor's row and column (from 1) and whether the alternate screen (a full-screen program) is on. It does not consume the output that the next read returns. Use it after job_input when the output alone does not show where the program is."}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": []string{"job_id"}, "additionalProperties": false})
	return b
}

// jobInputSchema is job_input's input schema: its text quotes the key
// syntax.
func jobInputSchema() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"job_id": map[string]any{"type": "string", "description": "A job started with bash and tty: true."},
			"text":   map[string]any{"type": "string", "description": "What to type. A line the program should take ends with <Enter>; an empty text types nothing and returns what the job shows within yield_ms. " + host.TermKeysSyntax},
			"yield_ms": map[string]any{"type": "integer", "minimum": 0, "maximum": host.MaxYieldMs,
				"description": "How long to wait for what the job shows, in milliseconds (default 1000, at most 30000). The call returns sooner when the job ends, or waits for input again."},
		},
		"required": []string{"job_id", "text"}, "additionalProperties": false,
	})
	return b
}

func (t *Tools) jobInput(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner := t.owner(req.Session)
	var in host.JobInput
	if err := decode(req, &in); err != nil {
		return t.text(owner, "invalid arguments: "+err.Error(), true), nil
	}
	out, err := t.tool.Input(ctx, owner, in)
	if err != nil {
		return t.text(owner, host.ErrorText(err), true), nil
	}
	return t.text(owner, out, false), nil
}

// jobScreen is job_output with screen: the screen, where the job is, and
// whether it waits for input.
func (t *Tools) jobScreen(ctx context.Context, owner string, id host.JobID) (*mcp.CallToolResult, error) {
	s, info, err := t.jobs.Screen(ctx, owner, id)
	if err != nil {
		return t.text(owner, host.ErrorText(err), true), nil
	}
	text := host.RenderScreen(s) + fmt.Sprintf("\n[job %s: %s]", info.ID, describeEnd(info))
	if s.WaitingForInput && info.State == host.JobRunning {
		text += "\n" + host.WaitingNote
	}
	return t.text(owner, text, false), nil
}
