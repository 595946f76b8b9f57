package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
)

// Register adds the tools to s: bash, job_output, job_kill and jobs, and
// job_input when the executor offers terminals.
func (t *Tools) Register(s *mcp.Server) {
	s.AddTool(&mcp.Tool{
		Name:        "bash",
		Description: t.tool.Description(),
		InputSchema: t.tool.InputSchema(),
	}, t.bash)
	s.AddTool(&mcp.Tool{
		Name:        "job_output",
		Description: "Read what a background job wrote since the last read; wait_ms waits for new output (at most 30000)." + screenWords(t.tool.Terminals()),
		InputSchema: jobOutputSchema(t.tool.Terminals()),
	}, t.jobOutput)
	if t.tool.Terminals() {
		s.AddTool(&mcp.Tool{
			Name: "job_input",
			Description: "Type to a job started with tty (bash with tty: true), then return what it showed within yield_ms: " +
				"the new output, and whether it now waits for input. Keys go by name in angle brackets: \"ls<Enter>\", \"<C-c>\", \"<Esc>:wq<Enter>\".",
			InputSchema: jobInputSchema(),
		}, t.jobInput)
	}
	s.AddTool(&mcp.Tool{
		Name:        "job_kill",
		Description: "Kill a background job and everything it started.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"job_id":{"type":"string"}},"required":["job_id"],"additionalProperties":false}`),
	}, t.jobKill)
	s.AddTool(&mcp.Tool{
		Name:        "jobs",
		Description: "List your background jobs.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}, t.list)
}

// decode reads a call's arguments strictly.
func decode(req *mcp.CallToolRequest, v any) error {
	raw := req.Params.Arguments
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	return decodeStrict(raw, v)
}

// decodeStrict decodes raw into v, refusing unknown keys.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// running counts owner's running background jobs.
func (t *Tools) running(owner string) int {
	n := 0
	for _, j := range t.jobs.List(owner) {
		if j.State == host.JobRunning {
			n++
		}
	}
	return n
}

// text is a tool result for owner: the text, after the completion notices
// of owner's jobs.
func (t *Tools) text(owner, s string, isError bool) *mcp.CallToolResult {
	var b strings.Builder
	for _, n := range t.jobs.Notices(owner) {
		fmt.Fprintf(&b, "[background job %s %s]\n", n.Job.ID, describeEnd(n.Job))
	}
	b.WriteString(s)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, IsError: isError}
}

func (t *Tools) bash(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner := t.owner(req.Session)
	var in host.BashInput
	if err := decode(req, &in); err != nil {
		return t.text(owner, "invalid arguments: "+err.Error(), true), nil
	}
	background := in.RunInBackground || in.TTY
	if !background {
		var end func()
		var n int
		var ok bool
		if ctx, end, n, ok = t.calls.begin(ctx, owner); !ok {
			return t.text(owner, fmt.Sprintf("you have %d bash calls running, the limit of a session (mcp.maxCallsPerSession): wait for one to end, or run the command in the background", n), true), nil
		}
		defer end()
	}
	if background && (t.maxJobs > 0 || t.maxAll > 0) {
		// The count and the start are one step: calls run concurrently.
		t.starting.Lock()
		defer t.starting.Unlock()
		if n := t.running(owner); t.maxJobs > 0 && n >= t.maxJobs {
			return t.text(owner, fmt.Sprintf("you have %d background jobs running, the limit of a session (mcp.maxJobsPerSession): wait for one to end, or kill one with job_kill", n), true), nil
		}
		if n := t.jobs.Running(); t.maxAll > 0 && n >= t.maxAll {
			return t.text(owner, fmt.Sprintf("the server runs %d background jobs, its limit (mcp.maxSessions x mcp.maxJobsPerSession, counting closed sessions' jobs in their grace): wait for one to end", n), true), nil
		}
	}
	var opts host.CallOptions
	var asked *approvalAsk
	if in.SandboxPermissions == host.RequireEscalated {
		asked = t.approvals.approver(req, in)
		opts.Approver = asked
	}
	if token := req.Params.GetProgressToken(); token != nil && !background {
		recent := host.NewRecentLines(progressLines)
		var stop func()
		opts.OnOutput = recent.Write
		opts.OnStart = func() { stop = reportProgress(ctx, req.Session, token, recent) }
		defer func() {
			if stop != nil {
				stop()
			}
		}()
	}
	out, err := t.tool.Call(ctx, owner, in, opts)
	if asked != nil && asked.pending != nil {
		// The client answers in a retry of this call (multi round-trip).
		return asked.pending, nil
	}
	if err != nil {
		return t.text(owner, host.ErrorText(err), true), nil
	}
	return t.text(owner, out, false), nil
}

func (t *Tools) jobOutput(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner := t.owner(req.Session)
	var in struct {
		JobID  string `json:"job_id"`
		WaitMs int64  `json:"wait_ms"`
		Screen bool   `json:"screen"`
	}
	if err := decode(req, &in); err != nil || in.JobID == "" || in.WaitMs < 0 {
		return t.text(owner, fmt.Sprintf("invalid arguments: want job_id and a wait_ms >= 0 (%v)", err), true), nil
	}
	if in.Screen {
		return t.jobScreen(ctx, owner, host.JobID(in.JobID))
	}
	deadline := time.Now().Add(time.Duration(min(in.WaitMs, maxWaitMs)) * time.Millisecond)
	var b strings.Builder
	var lossy bool
	var spill [2]string
	var notes []string
	var waiting bool
	for {
		r, info, err := t.jobs.Output(ctx, owner, host.JobID(in.JobID))
		if err != nil {
			return t.text(owner, host.ErrorText(err), true), nil
		}
		if info.Terminal {
			b.WriteString(host.TerminalText(r.Delta))
		} else {
			b.WriteString(r.Delta)
		}
		waiting = r.WaitingForInput && info.State == host.JobRunning
		lossy = lossy || r.Lossy
		if info.Note != "" {
			notes = append(notes, info.Note)
		}
		if r.StdoutSpillPath != "" {
			spill = [2]string{r.StdoutSpillPath, r.StderrSpillPath}
		}
		if b.Len() > 0 || info.State != host.JobRunning || !time.Now().Before(deadline) {
			b.WriteString(jobOutputEnd(lossy, spill, notes, info))
			if waiting {
				b.WriteString("\n" + host.WaitingNote)
			}
			return t.text(owner, b.String(), false), nil
		}
		select {
		case <-ctx.Done():
			return t.text(owner, "cancelled", true), nil
		case <-time.After(jobPollPeriod):
		}
	}
}

func (t *Tools) jobKill(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner := t.owner(req.Session)
	var in struct {
		JobID string `json:"job_id"`
	}
	if err := decode(req, &in); err != nil || in.JobID == "" {
		return t.text(owner, "invalid arguments: want job_id", true), nil
	}
	killed, err := t.jobs.Kill(ctx, owner, host.JobID(in.JobID))
	if err != nil {
		return t.text(owner, host.ErrorText(err), true), nil
	}
	if !killed {
		return t.text(owner, "job "+in.JobID+" had already finished", false), nil
	}
	return t.text(owner, "job "+in.JobID+" killed", false), nil
}

func (t *Tools) list(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	owner := t.owner(req.Session)
	var in struct{}
	if err := decode(req, &in); err != nil {
		return t.text(owner, "invalid arguments: jobs takes none", true), nil
	}
	var b strings.Builder
	for _, j := range t.jobs.List(owner) {
		fmt.Fprintf(&b, "%s\t%s\t%s\n", j.ID, describeEnd(j), j.Command)
	}
	if b.Len() == 0 {
		b.WriteString("no jobs")
	}
	return t.text(owner, strings.TrimSuffix(b.String(), "\n"), false), nil
}

// jobOutputEnd is what job_output puts after the output it read: a note
// when output was dropped, the notes of the reads (output a dead
// executor's spill files did not hold), where the job is, and whether more
// is left to read.
func jobOutputEnd(lossy bool, spill [2]string, notes []string, info host.JobInfo) string {
	var b strings.Builder
	if lossy {
		b.WriteString("\n" + droppedNote(spill))
	}
	for _, n := range notes {
		b.WriteString("\n[" + n + "]")
	}
	fmt.Fprintf(&b, "\n[job %s: %s]", info.ID, describeEnd(info))
	if info.Unread {
		b.WriteString("\n[more output: call job_output again]")
	}
	return b.String()
}

// droppedNote says that output was dropped between reads, and names the
// spill files that hold it in full: only those there are.
func droppedNote(spill [2]string) string {
	var paths []string
	for _, p := range spill {
		if p != "" {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "[some output was dropped between reads; no spill file holds it]"
	}
	return "[some output was dropped between reads; the full output is in " + strings.Join(paths, " and ") + "]"
}

// describeEnd says where a job is: running, or how it ended.
func describeEnd(j host.JobInfo) string {
	switch {
	case j.State == host.JobRunning:
		return "running"
	case j.State == host.JobKilled && j.Exit.KillReason != "":
		// Why it was killed says more than the signal that did it: a
		// reload, a crash, the host closing, job_kill.
		if strings.HasPrefix(j.Exit.KillReason, "killed") {
			return j.Exit.KillReason
		}
		return "killed: " + j.Exit.KillReason
	case j.Exit.Signal != "":
		return "killed by signal " + j.Exit.Signal
	case j.Exit.ExitCode != nil:
		return fmt.Sprintf("exited with code %d", *j.Exit.ExitCode)
	case j.Exit.KillReason != "":
		return "killed (" + j.Exit.KillReason + ")"
	}
	return j.State.String()
}
