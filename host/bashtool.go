package host

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// ErrToolInput: a bash tool call the tool cannot take (a missing command, a
// negative timeout, a field the mounted executor does not offer).
var ErrToolInput = errors.New("host: bash tool input")

// ErrEscalationDenied: a call asked to run outside the sandbox, and no
// approver said yes.
var ErrEscalationDenied = errors.New("host: escalation denied")

// BashInput is a call of the model-facing bash tool.
type BashInput struct {
	Command string `json:"command"`
	// TimeoutMs is the command's timeout; 0 takes the executor's default.
	// A timeout in the JSON must be at least 1, as the schema says.
	TimeoutMs       int64  `json:"timeout,omitempty"`
	Description     string `json:"description,omitempty"`
	RunInBackground bool   `json:"run_in_background,omitempty"`
	// SandboxPermissions and Justification exist only when the mounted
	// executor sandboxes.
	SandboxPermissions string `json:"sandbox_permissions,omitempty"`
	Justification      string `json:"justification,omitempty"`
	// Workdir runs the command in this directory (relative to the
	// session's workdir, or absolute within its roots) and makes it the
	// session's working directory: it resets what earlier cds left.
	Workdir string `json:"workdir,omitempty"`
	// TTY runs the command on a terminal as a job, and the call returns
	// what it showed within YieldMs (DefaultYieldMs when 0, at most
	// MaxYieldMs). Only when the mounted executor offers terminals.
	TTY     bool  `json:"tty,omitempty"`
	YieldMs int64 `json:"yield_ms,omitempty"`

	// timeoutGiven says the JSON named a timeout (0 included).
	timeoutGiven bool
}

// UnmarshalJSON decodes a tool call's arguments strictly (no property the
// schema lacks), noting whether they named a timeout: an explicit 0 is
// refused, not taken for the default.
func (in *BashInput) UnmarshalJSON(data []byte) error {
	type plain BashInput // without this method
	var present struct {
		Timeout json.RawMessage `json:"timeout"`
	}
	if err := json.Unmarshal(data, &present); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode((*plain)(in)); err != nil {
		return err
	}
	in.timeoutGiven = present.Timeout != nil && string(present.Timeout) != "null"
	return nil
}

// The sandbox_permissions values: UseDefault runs in the executor's
// sandbox; RequireEscalated asks to run outside it.
const (
	UseDefault       = "use_default"
	RequireEscalated = "require_escalated"
)

// BashTool is the model-facing bash tool over a mounted executor: its input
// schema and its rendering contract, the same for MCP and for a Go host.
type BashTool struct {
	// Workdir, when set, is where every command runs (an absolute path);
	// empty means the executor's default, its own working directory.
	Workdir string

	shell   pluginapi.ShellExecutor
	jobs    *Jobs
	sandbox pluginapi.SandboxMode
	policy  ApprovalPolicy
	// shellName is the mounted executor's shell ("bash", "pwsh"), "" when
	// it does not say.
	shellName string
	// dirs are the sessions' working directories (cwd.go); they persist
	// only under bash.
	dirs sessionDirs
	// terminals: the executor offers terminals and input (tty).
	terminals bool
}

// persistsCWD says whether a session's working directory persists across
// its calls: the wrapper that carries it is bash.
func (t *BashTool) persistsCWD() bool { return t.shellName == "bash" }

// ForgetSession drops what the tool keeps of owner's session (its working
// directory), once the session has ended.
func (t *BashTool) ForgetSession(owner string) { t.dirs.forget(owner) }

// CallOptions are what one call brings besides its input.
type CallOptions struct {
	// Approver is asked about a require_escalated call; nil denies it.
	Approver Approver
	// OnStart, when set, is called once a foreground command is about to
	// run: past its checks and any approval.
	OnStart func()
	// OnOutput, when set, sees a foreground command's output as it is
	// written (to show progress). It must not block.
	OnOutput func(pluginapi.Stream, []byte)
}

// NewBashTool returns the bash tool over shell, starting background calls
// as jobs. It asks the executor whether it sandboxes, which decides, with
// policy, whether the tool offers sandbox_permissions and justification
// (never under EscalationDeny). Escalations go through policy, then the
// approver each call brings.
func NewBashTool(ctx context.Context, shell pluginapi.ShellExecutor, jobs *Jobs, policy ApprovalPolicy) (*BashTool, error) {
	d, err := shell.Describe(ctx)
	if err != nil {
		return nil, err
	}
	return &BashTool{shell: shell, jobs: jobs, sandbox: d.SandboxMode, policy: policy, shellName: d.Shell, terminals: d.Terminals && d.Input}, nil
}

// Description is the tool's description for a model: it names the mounted
// executor's shell, which decides the syntax of every command.
func (t *BashTool) Description() string {
	return "Run a " + t.shellWord() + " command and return its output, then an exit marker ([exit code: N] or [killed by signal: X]) when it did not exit 0. " +
		"With run_in_background, start it as a job instead; read it with job_output." + t.ttyWords()
}

// Terminals says whether the tool offers tty: the mounted executor
// offers terminals and input.
func (t *BashTool) Terminals() bool { return t.terminals }

func (t *BashTool) ttyWords() string {
	if !t.terminals {
		return ""
	}
	return " With tty, run it on a terminal as a job, for programs that interact (REPLs, prompts, pagers, editors, top); answer it with job_input."
}

// shellWord names the mounted shell, or says "shell" when the executor
// does not.
func (t *BashTool) shellWord() string {
	if t.shellName == "" {
		return "shell"
	}
	return t.shellName
}

// InputSchema is the JSON Schema of the tool's input.
func (t *BashTool) InputSchema() json.RawMessage {
	props := map[string]any{
		"command":           map[string]any{"type": "string", "description": "The " + t.shellWord() + " command to run."},
		"timeout":           map[string]any{"type": "integer", "minimum": 1, "description": "Timeout in milliseconds (default 120000; one above the executor's maximum, 600000 by default, is capped, and the result says so)."},
		"description":       map[string]any{"type": "string", "description": "What the command does, in a few words."},
		"run_in_background": map[string]any{"type": "boolean", "description": "Run as a background job; read it with job_output."},
	}
	if t.terminals {
		props["tty"] = map[string]any{"type": "boolean", "description": TerminalHint}
		props["yield_ms"] = map[string]any{"type": "integer", "minimum": 0, "maximum": MaxYieldMs,
			"description": "With tty: how long to wait for what the command shows, in milliseconds (default 1000, at most 30000). The call returns sooner when the command ends, or waits for input."}
	}
	if t.persistsCWD() {
		props["workdir"] = map[string]any{"type": "string", "description": "Run in this directory (relative to the session's workdir, or absolute within the allowed roots) and make it the session's working directory. Without it, the command starts where the session's last command ended (a cd persists)."}
	}
	if t.escalates() {
		props["sandbox_permissions"] = map[string]any{
			"type": "string", "enum": []string{UseDefault, RequireEscalated},
			"description": "require_escalated asks to run outside the sandbox (" + string(t.sandbox) + "); a person must approve.",
		}
		props["justification"] = map[string]any{"type": "string", "description": "Why the command needs to run outside the sandbox."}
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object", "properties": props, "required": []string{"command"}, "additionalProperties": false,
	})
	return schema
}

// escalates says whether a call may ask to run outside the sandbox: the
// executor sandboxes, and the approval policy does not refuse every
// escalation. Only then does the tool offer sandbox_permissions, or a
// denial's note suggest it.
func (t *BashTool) escalates() bool {
	return t.sandbox != pluginapi.SandboxNone && t.policy.Escalation != EscalationDeny
}

// Call runs a tool call for owner and returns the text for the model: the
// rendered result of a foreground command, or how to follow a background
// job. A command that ran and failed is a result, not an error; the error
// is for calls that could not run (bad input, a denied escalation, an
// infrastructure failure). A require_escalated call runs only once
// opts.Approver said yes, within the policy's time.
func (t *BashTool) Call(ctx context.Context, owner string, in BashInput, opts CallOptions) (string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", fmt.Errorf("%w: command is required", ErrToolInput)
	}
	if in.TimeoutMs < 0 || in.timeoutGiven && in.TimeoutMs < 1 {
		return "", fmt.Errorf("%w: timeout %d: it must be at least 1 (milliseconds); leave it out for the default", ErrToolInput, in.TimeoutMs)
	}
	if in.SandboxPermissions != "" && t.sandbox == pluginapi.SandboxNone {
		return "", fmt.Errorf("%w: sandbox_permissions: the mounted executor does not sandbox", ErrToolInput)
	}
	if in.TTY && !t.terminals {
		return "", fmt.Errorf("%w: tty: the mounted executor does not offer terminals", ErrToolInput)
	}
	if in.YieldMs != 0 && !in.TTY {
		return "", fmt.Errorf("%w: yield_ms applies only with tty", ErrToolInput)
	}
	yield, err := yieldInput(in.YieldMs)
	if err != nil {
		return "", err
	}
	background := in.RunInBackground || in.TTY
	switch in.SandboxPermissions {
	case "", UseDefault, RequireEscalated:
	default:
		return "", fmt.Errorf("%w: sandbox_permissions %q is neither %q nor %q", ErrToolInput, in.SandboxPermissions, UseDefault, RequireEscalated)
	}
	// The owner's commands run in a partition of their own: an executor
	// that keeps a place alive between commands (a container) keeps one
	// per owner, so owners do not see each other's processes.
	req := pluginapi.ExecRequest{Command: in.Command, TimeoutMs: in.TimeoutMs, Workdir: t.Workdir, Partition: owner}
	if in.Workdir != "" && !t.persistsCWD() {
		return "", fmt.Errorf("%w: workdir: the mounted executor's shell (%s) does not keep a working directory", ErrToolInput, t.shellWord())
	}
	var session sessionDir
	var dir, nonce string
	if t.persistsCWD() {
		session = t.dirs.get(owner)
		dir = session.cwd
		if in.Workdir != "" {
			d, err := session.resolveWorkdir(in.Workdir, t.Workdir)
			if err != nil {
				return "", err
			}
			dir = d
		}
		if !background {
			nonce = newNonce()
		}
		req.Command = cwdWrap(in.Command, dir, nonce, !background)
	}
	if in.SandboxPermissions == RequireEscalated {
		err := t.policy.approve(ctx, opts.Approver, EscalationRequest{
			Owner: owner, Command: in.Command, Description: in.Description, Justification: in.Justification,
			Mode: t.sandbox, Target: EscalationTarget,
		})
		if err != nil {
			return "", err
		}
		req.SandboxMode = EscalationTarget
	}
	if in.TTY {
		req.Terminal = &pluginapi.Terminal{Rows: DefaultTerminal.Rows, Cols: DefaultTerminal.Cols}
		return t.startTerminal(ctx, owner, req, in.Command, yield)
	}
	if in.RunInBackground {
		job, err := t.jobs.start(ctx, owner, req, in.Command)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Started background job %s. Read its output with job_output (job_id %q); stop it with job_kill.", job.ID, job.ID), nil
	}
	if opts.OnStart != nil {
		opts.OnStart()
	}
	onOutput := opts.OnOutput
	if onOutput != nil && nonce != "" {
		onOutput = func(s pluginapi.Stream, b []byte) { opts.OnOutput(s, withoutCWDReport(b, nonce)) }
	}
	res, err := pluginapi.RunRequest(ctx, t.shell, req, onOutput)
	if err != nil {
		return "", err
	}
	var notes []string
	if nonce != "" {
		notes = t.afterRun(owner, session, dir, nonce, &res)
	}
	if in.TimeoutMs > 0 && res.TimeoutMs > 0 && res.TimeoutMs < in.TimeoutMs {
		// The executor capped it: the model must not believe it got
		// the time it asked for.
		notes = append(notes, fmt.Sprintf("[timeout %d ms is above the maximum %d ms; ran with %d ms]", in.TimeoutMs, res.TimeoutMs, res.TimeoutMs))
	}
	return renderResult(res, t.escalates(), notes...), nil
}

// afterRun takes the working-directory report out of res's output, keeps
// where the command ended as owner's next directory when it is within the
// roots, and returns the notes that say where the session is.
func (t *BashTool) afterRun(owner string, session sessionDir, dir, nonce string, res *pluginapi.RunResult) []string {
	rep, ok := takeCWDReport(&res.Stdout, nonce)
	if !ok {
		// The shell ended before it could say (killed, or it exec'd):
		// the session stays where it was.
		return nil
	}
	if rep.start != "" {
		session.base = rep.start
	}
	if sb := res.Sandbox; sb != nil {
		session.roots = sb.WritableRoots
	}
	var notes []string
	if rep.gone {
		notes = append(notes, fmt.Sprintf("[the working directory %s is gone or cannot be entered; the command ran in the session's workdir %s]", dir, session.base))
	}
	before := cmp.Or(dir, session.base)
	if rep.gone {
		before = session.base
	}
	switch {
	case rep.end == "":
		session.cwd = ""
		notes = append(notes, fmt.Sprintf("[the command's working directory is gone; the next command starts in the session's workdir %s]", session.base))
	case !session.allowed(rep.end, t.Workdir):
		session.cwd = ""
		notes = append(notes, fmt.Sprintf("[the command ended in %s, outside the allowed roots (%s); the next command starts in the session's workdir %s]", rep.end, strings.Join(session.rootList(t.Workdir), ", "), session.base))
	default:
		if rep.end == session.base {
			session.cwd = ""
		} else {
			session.cwd = rep.end
		}
		if rep.end != before || rep.end != session.base {
			notes = append(notes, "[cwd: "+rep.end+"]")
		}
	}
	t.dirs.put(owner, session)
	return notes
}

// RenderResult renders a run for a model: the output cleaned of terminal
// control (the spill file keeps the raw bytes), stderr in a marked section,
// notes on truncation and interruption, then the exit marker, which
// pluginapi.ParseExitStatus reads back.
func RenderResult(res pluginapi.RunResult) string { return renderResult(res, true) }

// renderResult is RenderResult; a likely denial's note suggests an
// escalation only when escalate is set.
func renderResult(res pluginapi.RunResult, escalate bool, extra ...string) string {
	var b strings.Builder
	b.WriteString(CleanOutput(res.Stdout.Text))
	if res.Stderr.Text != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(pluginapi.StderrSectionHeader)
		b.WriteString(CleanOutput(res.Stderr.Text))
	}
	var notes []string
	for _, o := range []struct {
		name string
		out  pluginapi.CollectedOutput
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if !o.out.Truncated {
			continue
		}
		note := fmt.Sprintf("[%s truncated: %d bytes in all", o.name, o.out.TotalBytes)
		if o.out.SpillPath != "" {
			note += "; the full output is in " + o.out.SpillPath
		}
		notes = append(notes, note+"]")
	}
	if res.TimedOut {
		notes = append(notes, fmt.Sprintf("[timed out after %d ms; the command and its processes were killed]", res.TimeoutMs))
	}
	if res.Aborted {
		notes = append(notes, "[aborted: "+res.AbortReason+"]")
	}
	if res.Interrupted != "" {
		notes = append(notes, "[interrupted: the executor lost the command, so how it ended is unknown: "+res.Interrupted+"]")
	}
	if sb := res.Sandbox; sb != nil {
		switch {
		case sb.RunnerFailure != "":
			notes = append(notes, fmt.Sprintf("[sandbox %s: the command did not run: %s]", sb.Mode, sb.RunnerFailure))
		case sb.Interrupted != "":
			notes = append(notes, fmt.Sprintf("[sandbox %s: the sandbox lost the command, so how it ended is unknown: %s]", sb.Mode, sb.Interrupted))
		case sb.LikelyDenial && !escalate:
			note := fmt.Sprintf("[sandbox %s likely refused this (%s)", sb.Mode, strings.Join(sb.Evidence, " | "))
			if protected := sb.DeniedProtected(); len(protected) > 0 {
				note += fmt.Sprintf(": %s is protected (hooks and configurations that tools outside the sandbox run, as the user)", strings.Join(protected, ", "))
			}
			notes = append(notes, note+"; escalation is off by the approval policy, so do it within the sandbox or tell the user what the command needs]")
		case sb.LikelyDenial:
			if protected := sb.DeniedProtected(); len(protected) > 0 {
				// Escalating would let the command write what tools
				// outside the sandbox run later, as the user.
				notes = append(notes, fmt.Sprintf("[sandbox %s likely refused this (%s): %s is protected (hooks and configurations that tools outside the sandbox run, as the user); an escalation (sandbox_permissions: %s) would write it, so ask only if the user wants exactly that]",
					sb.Mode, strings.Join(sb.Evidence, " | "), strings.Join(protected, ", "), RequireEscalated))
				break
			}
			notes = append(notes, fmt.Sprintf("[sandbox %s likely refused this (%s); if the command must do it, ask again with sandbox_permissions: %s and a justification]",
				sb.Mode, strings.Join(sb.Evidence, " | "), RequireEscalated))
		}
	}
	notes = append(notes, extra...)
	body := b.String()
	if len(notes) > 0 {
		if body != "" && !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		body += strings.Join(notes, "\n")
	}
	return pluginapi.Render(strings.TrimSuffix(body, "\n"), res.ExitStatus())
}

var (
	// ansiSequence matches CSI and OSC escape sequences, and two-byte
	// escapes.
	ansiSequence = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])`)
)

// CleanOutput removes what only a terminal needs: ANSI escape sequences, and
// the lines a carriage return overwrote (progress bars keep their last
// state).
func CleanOutput(s string) string {
	s = ansiSequence.ReplaceAllString(s, "")
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if j := strings.LastIndexByte(strings.TrimRight(line, "\r"), '\r'); j >= 0 {
			line = line[j+1:]
		}
		lines[i] = strings.TrimRight(line, "\r")
	}
	return strings.Join(lines, "\n")
}
