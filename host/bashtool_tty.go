package host

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// The yield of a call that starts a terminal job or types to one: how
// long it waits for the job to show something.
const (
	DefaultYieldMs = 1_000
	MaxYieldMs     = 30_000
)

// WaitingNote is what a result says of a job that waits for input.
const WaitingNote = "[the command is waiting for input: answer with job_input, or kill it]"

// TerminalHint is the schema's description of the bash tool's tty.
const TerminalHint = "Run the command on a terminal (24x80) as a job, for interactive programs: a REPL, a prompt (read -p, a password), git add -p, less, vim, top, a curses menu. " +
	"The call returns what the command showed within yield_ms and its job id while it runs; then type to it with job_input and look at it with job_output (screen: true for full-screen programs). " +
	"Without tty, stdin is empty (/dev/null) and pagers are off: prefer that for commands that need no input."

// yieldInput is the yield a call asked for: DefaultYieldMs when it named
// none, at most MaxYieldMs.
func yieldInput(ms int64) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, fmt.Errorf("%w: yield_ms %d: it must be at least 0", ErrToolInput, ms)
	case ms == 0:
		ms = DefaultYieldMs
	}
	return time.Duration(min(ms, MaxYieldMs)) * time.Millisecond, nil
}

// startTerminal starts req on a terminal as a job of owner's and returns
// what it showed within yield.
func (t *BashTool) startTerminal(ctx context.Context, owner string, req pluginapi.ExecRequest, command string, yield time.Duration) (string, error) {
	since := time.Now()
	job, err := t.jobs.start(ctx, owner, req, command)
	if err != nil {
		return "", err
	}
	r, err := t.jobs.Yield(ctx, owner, job.ID, since, yield)
	if err != nil {
		return "", err
	}
	return RenderTerminalRead(r), nil
}

// JobInput is a call of job_input: text to type to a terminal job, and
// how long to wait for what it shows.
type JobInput struct {
	JobID   string `json:"job_id"`
	Text    string `json:"text"`
	YieldMs int64  `json:"yield_ms,omitempty"`
}

// Input types in.Text to owner's terminal job (keys named as
// termkeys.Syntax says) and returns what the job showed within the yield:
// rendered for a model, as bash with tty does.
func (t *BashTool) Input(ctx context.Context, owner string, in JobInput) (string, error) {
	if in.JobID == "" {
		return "", fmt.Errorf("%w: job_id is required", ErrToolInput)
	}
	yield, err := yieldInput(in.YieldMs)
	if err != nil {
		return "", err
	}
	if in.Text != "" {
		if err := t.jobs.Type(ctx, owner, JobID(in.JobID), in.Text); err != nil {
			return "", err
		}
	}
	r, err := t.jobs.Yield(ctx, owner, JobID(in.JobID), time.Now(), yield)
	if err != nil {
		return "", err
	}
	return RenderTerminalRead(r), nil
}

// RenderTerminalRead renders what a terminal job showed for a model: its
// output without what only a terminal reads (escape codes, overwritten
// lines), or the screen of a full-screen program, then where the job is, then whether it waits for input; an
// ended job's exit marker last, as pluginapi.ParseExitStatus reads it.
func RenderTerminalRead(r TerminalRead) string {
	body := TerminalText(r.Text)
	if r.Screen != nil {
		// A full-screen program's output is drawing: its screen says
		// what it shows.
		body = "[a full-screen program; its screen:]\n" + RenderScreen(*r.Screen)
	}
	var notes []string
	if r.Lossy {
		notes = append(notes, "[some output was dropped before the host read it]")
	}
	id := r.Job.ID
	if r.Job.State == JobRunning {
		notes = append(notes, fmt.Sprintf("[job %s runs on a terminal: type to it with job_input (job_id %q), see its screen with job_output (screen: true), stop it with job_kill]", id, id))
		if r.WaitingForInput {
			notes = append(notes, WaitingNote)
		}
	} else {
		notes = append(notes, fmt.Sprintf("[job %s has ended]", id))
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	body += strings.Join(notes, "\n")
	if r.Job.State == JobRunning {
		return body
	}
	return renderExit(body, r.Job)
}

// renderExit appends a finished job's exit marker to body.
func renderExit(body string, j JobInfo) string {
	if j.Exit.ExitCode == nil && j.Exit.Signal == "" {
		return body
	}
	code := 0
	if j.Exit.ExitCode != nil {
		code = *j.Exit.ExitCode
	}
	return pluginapi.Render(body, pluginapi.ExitStatus{ExitCode: code, Signal: j.Exit.Signal})
}

// RenderScreen renders a terminal job's screen for a model: its text,
// then a line that places the cursor (1-based) and says whether the
// alternate screen (a full-screen program) is on.
func RenderScreen(s Screen) string {
	alt := "off"
	if s.AltScreen {
		alt = "on"
	}
	cursor := fmt.Sprintf("cursor at row %d, column %d", s.CursorRow+1, s.CursorCol+1)
	if s.CursorHidden {
		cursor += " (hidden)"
	}
	return fmt.Sprintf("%s\n[screen %dx%d; %s; alternate screen %s]", s.Text, s.Rows, s.Cols, cursor, alt)
}

// terminalControl matches what CleanOutput leaves of a terminal's
// control: character set designations (ESC ( B), keypad modes (ESC =,
// ESC >), and control characters other than newline, tab and carriage
// return.
var terminalControl = regexp.MustCompile(`\x1b[()*+][0-9A-Za-z]|\x1b[=>78]|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]`)

// TerminalText is a terminal's output for a model: without escape codes,
// control characters, or what a carriage return overwrote.
func TerminalText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return CleanOutput(terminalControl.ReplaceAllString(s, ""))
}
