package pluginapi

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// SandboxMode names a confinement, in the vocabulary agent users know. The
// empty mode means "this executor does not sandbox".
type SandboxMode string

// The sandbox modes.
const (
	SandboxNone             SandboxMode = ""
	SandboxReadOnly         SandboxMode = "read-only"
	SandboxWorkspaceWrite   SandboxMode = "workspace-write"
	SandboxDangerFullAccess SandboxMode = "danger-full-access"
)

// Stream names one of a command's output streams. The zero value is unset.
type Stream int

// The output streams.
const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return "unset"
}

// Description is what an executor says about itself.
type Description struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Platform string `json:"platform"`
	// SandboxMode is the executor's default confinement; empty when the
	// executor does not sandbox.
	SandboxMode       SandboxMode `json:"sandboxMode,omitempty"`
	SettingsNamespace string      `json:"settingsNamespace"`
	// SettingsSchema is a JSON Schema document for the executor's settings.
	SettingsSchema string   `json:"settingsSchema,omitempty"`
	Services       []string `json:"services"`
	// Uncontained says what a confined command can still reach, for a
	// sandboxing executor: the classes its sandbox does not close, so that
	// nobody assumes a protection it does not have.
	Uncontained []string `json:"uncontained,omitempty"`
	// Shell is the shell commands run under ("bash", "pwsh"), as a tool's
	// description names it for a model; empty when the executor does not
	// say.
	Shell string `json:"shell,omitempty"`
	// Reach says where, on the machine the plugin runs on, the executor's
	// commands can write. A host never launches again (reload, restart) a
	// plugin binary that lies there, unless its checksum is pinned; the
	// zero value (ReachUndeclared) leaves the host to guess.
	Reach HostReach `json:"reach,omitzero"`
	// Terminals says Start takes a terminal (ExecRequest.Terminal) and its
	// processes can be resized (Resizer). False for a plugin built before
	// terminals were in the contract: a host refuses a terminal to it.
	Terminals bool `json:"terminals,omitempty"`
	// Input says Start keeps a process's input open when asked
	// (ExecRequest.OpenStdin, or a terminal) and its processes take input
	// (InputWriter).
	Input bool `json:"input,omitempty"`
}

// ReachKind is how far an executor's commands reach on the plugin's
// machine.
type ReachKind string

const (
	// ReachUndeclared: the executor does not say.
	ReachUndeclared ReachKind = ""
	// ReachPaths: only beneath HostReach.Paths (nothing when there are
	// none: the commands run on another machine), and the workdir a request
	// names when HostReach.Workdirs is set.
	ReachPaths ReachKind = "paths"
	// ReachUser: wherever the plugin's user may write; the commands run
	// unconfined.
	ReachUser ReachKind = "user"
)

// HostReach is where an executor's commands can write on the machine its
// plugin runs on (see Description.Reach).
type HostReach struct {
	Kind ReachKind `json:"kind,omitempty"`
	// Paths are absolute directories (for ReachPaths).
	Paths []string `json:"paths,omitempty"`
	// Workdirs says a command can also write the workdir it runs in,
	// wherever a request puts it (a sandbox's workspace-write).
	Workdirs bool `json:"workdirs,omitempty"`
}

// ExecRequest is what a caller asks for. Zero fields take the executor's
// defaults in Resolve.
type ExecRequest struct {
	Command string
	// Workdir is the working directory; empty means the executor's default.
	Workdir   string
	TimeoutMs int64
	// Stdin is written to the command once at spawn, then closed. Without it
	// the command reads /dev/null.
	Stdin []byte
	// Env is the trusted caller's environment, merged over the executor's
	// model-friendly overrides.
	Env map[string]string
	// DshEnv is the managed environment: keys must match DSH_*, and nothing
	// can displace them.
	DshEnv         map[string]string
	StdoutMaxBytes int64
	StderrMaxBytes int64
	// SandboxMode asks a sandboxing executor for a mode other than its
	// default (after approval). Empty means the default.
	SandboxMode SandboxMode
	// Partition names the partition the request belongs to, opaque to the
	// executor: requests of different partitions must not share processes
	// (one cannot see, signal or read the other's). A host sets it to the
	// owner of the request (an MCP session); empty is a partition too. An
	// executor whose every command runs apart (its own PID namespace, or
	// the user's machine by design) ignores it. Resolve carries it into
	// the spec unchanged.
	Partition string
	// Terminal, for Start only, gives the command a pseudo-terminal of
	// this size as its stdin, stdout and stderr: its output is one stream
	// (stdout), its input stays open (OpenStdin), and its environment is a
	// terminal's (TERM=xterm-256color, no pager overrides). An executor
	// offers it when Description.Terminals says so. Nil: no terminal.
	Terminal *Terminal
	// OpenStdin, for Start only, keeps the command's stdin open: a pipe
	// that takes Stdin first, then what InputWriter writes, until it
	// closes it. An executor offers it when Description.Input says so.
	OpenStdin bool
}

// Terminal is the size of a pseudo-terminal, in character cells.
type Terminal struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// MaxTerminalSize bounds a terminal's rows and its columns.
const MaxTerminalSize = 1000

// CheckTerminalSize says why rows and cols cannot size a terminal, if they
// cannot: each must be within [1, MaxTerminalSize].
func CheckTerminalSize(rows, cols int) error {
	if rows < 1 || rows > MaxTerminalSize || cols < 1 || cols > MaxTerminalSize {
		return fmt.Errorf("%w: a terminal of %d rows and %d columns: each must be within [1, %d]",
			ErrInvalidRequest, rows, cols, MaxTerminalSize)
	}
	return nil
}

// ExecSpec is a request after Resolve: every field set and capped.
type ExecSpec struct {
	Command        string
	Workdir        string
	TimeoutMs      int64
	Stdin          []byte
	Env            map[string]string
	DshEnv         map[string]string
	StdoutMaxBytes int64
	StderrMaxBytes int64
	SandboxMode    SandboxMode
	// KillGraceMs is how long a process has between SIGTERM and SIGKILL.
	KillGraceMs int64
	// Partition is the request's, unchanged.
	Partition string
	// Terminal is the request's, its size checked.
	Terminal *Terminal
	// OpenStdin is set when the request asked for it or for a terminal.
	OpenStdin bool
}

// Interactive says whether the spec asks for what only Start gives: a
// terminal, or an open stdin.
func (s ExecSpec) Interactive() bool { return s.Terminal != nil || s.OpenStdin }

// Timeout is TimeoutMs as a duration.
func (s ExecSpec) Timeout() time.Duration { return time.Duration(s.TimeoutMs) * time.Millisecond }

// KillGrace is KillGraceMs as a duration.
func (s ExecSpec) KillGrace() time.Duration { return time.Duration(s.KillGraceMs) * time.Millisecond }

// CollectedOutput is one stream of a foreground command, as collected.
type CollectedOutput struct {
	// Text is the collected output: all of it, or when Truncated its head and
	// tail within the cap, cut on UTF-8 boundaries.
	Text       string `json:"text"`
	TotalBytes int64  `json:"totalBytes"`
	Truncated  bool   `json:"truncated"`
	// SpillPath names a file holding the full stream, when there is one.
	SpillPath string `json:"spillPath,omitempty"`
	// SpillTruncated is set when the spill file holds less than the stream:
	// it reached its size cap, or SpillError stopped it.
	SpillTruncated bool `json:"spillTruncated,omitempty"`
	// SpillError says why the spill failed (an unwritable directory, a full
	// disk); the run's other facts stand.
	SpillError string `json:"spillError,omitempty"`
}

// SandboxFacts describe a sandboxed run. Only a sandboxing executor sets them.
type SandboxFacts struct {
	Mode SandboxMode `json:"mode"`
	// Enforced lists the confinements that were in force.
	Enforced []string `json:"enforced,omitempty"`
	// NotEnforced lists what the policy asks for that the executor does
	// not itself enforce or could not apply: a NetworkPolicy only the
	// cluster's CNI may apply, a limit the platform offers no way to set.
	// Nothing here is in force as far as the executor knows.
	NotEnforced []string `json:"notEnforced,omitempty"`
	// LikelyDenial is set when the output suggests the sandbox refused
	// something; Evidence holds the lines that suggest it.
	LikelyDenial bool     `json:"likelyDenial"`
	Evidence     []string `json:"evidence,omitempty"`
	// RunnerFailure says why the command did not run confined (and so did
	// not run at all).
	RunnerFailure string `json:"runnerFailure,omitempty"`
	// WritableRoots are the directories the command could write beneath,
	// symlinks resolved, as the sandbox enforced them.
	WritableRoots []string `json:"writableRoots,omitempty"`
	// Limits are the resource limits in force ("processes 2048 (pids
	// cgroup)").
	Limits []string `json:"limits,omitempty"`
	// LimitsReached says which of those limits the run ran into ("processes:
	// the limit refused 12 forks").
	LimitsReached []string `json:"limitsReached,omitempty"`
	// Interrupted says why the run ended without its exit being known: the
	// sandbox lost it (its spawner died or stopped answering). Whatever
	// the command was doing, it is over.
	Interrupted string `json:"interrupted,omitempty"`
	// ProtectedPaths are the paths inside the writable roots that stay
	// read-only and cannot be created (hooks, configs that run code),
	// symlinks resolved.
	ProtectedPaths []string `json:"protectedPaths,omitempty"`
	// Unprotected names the default protected paths the settings
	// unprotected (".vscode").
	Unprotected []string `json:"unprotected,omitempty"`
}

// RunResult is the settled outcome of a foreground command.
type RunResult struct {
	// ExitCode is nil when the process died from a signal.
	ExitCode *int
	// Signal names the signal that ended the process ("SIGKILL"), or is empty.
	Signal string
	// TimedOut is set when the executor's timeout was the first interrupt
	// cause; Aborted when the caller's cancellation was. Never both.
	TimedOut    bool
	Aborted     bool
	AbortReason string
	// TimeoutMs is the effective timeout of this run.
	TimeoutMs  int64
	Stdout     CollectedOutput
	Stderr     CollectedOutput
	DurationMs int64
	// LeftoversKilled counts the processes the command left running that
	// the executor killed after the shell exited.
	LeftoversKilled int
	Sandbox         *SandboxFacts
	// Interrupted says why the run ended without its exit being known: the
	// executor lost the command (the connection to where it ran dropped;
	// the agent there kills what it ran). ExitCode and Signal are then
	// unset, and the output is what arrived before.
	Interrupted string
}

// MarshalJSON writes the result with camelCase fields, exitCode and signal
// as null when absent.
func (r RunResult) MarshalJSON() ([]byte, error) {
	var signal *string
	if r.Signal != "" {
		signal = &r.Signal
	}
	return json.Marshal(struct {
		ExitCode        *int            `json:"exitCode"`
		Signal          *string         `json:"signal"`
		TimedOut        bool            `json:"timedOut"`
		Aborted         bool            `json:"aborted"`
		AbortReason     string          `json:"abortReason,omitempty"`
		TimeoutMs       int64           `json:"timeoutMs"`
		Stdout          CollectedOutput `json:"stdout"`
		Stderr          CollectedOutput `json:"stderr"`
		DurationMs      int64           `json:"durationMs"`
		LeftoversKilled int             `json:"leftoversKilled,omitempty"`
		Sandbox         *SandboxFacts   `json:"sandbox,omitempty"`
		Interrupted     string          `json:"interrupted,omitempty"`
	}{r.ExitCode, signal, r.TimedOut, r.Aborted, r.AbortReason, r.TimeoutMs, r.Stdout, r.Stderr,
		r.DurationMs, r.LeftoversKilled, r.Sandbox, r.Interrupted})
}

// ExitStatus is the result's exit facts, as rendered by Render.
func (r RunResult) ExitStatus() ExitStatus {
	if r.ExitCode == nil {
		return ExitStatus{Signal: r.Signal}
	}
	return ExitStatus{ExitCode: *r.ExitCode, Signal: r.Signal}
}

// OutputRead is what ShellProcess.ReadOutput returns.
type OutputRead struct {
	// Delta is the output since the previous read: stdout, then stderr in a
	// section headed StderrSectionHeader.
	Delta string `json:"delta"`
	// Lossy is set when the buffer cap dropped bytes that Delta cannot include.
	Lossy           bool   `json:"lossy"`
	StdoutSpillPath string `json:"stdoutSpillPath,omitempty"`
	StderrSpillPath string `json:"stderrSpillPath,omitempty"`
	// Ends, when the executor says, is where in each stream this read's
	// text ends: what the process wrote to the stream so far, less what is
	// still unread. A reader that loses the executor (its plugin died)
	// reads on in the spill files from there, without repeating or
	// skipping a byte.
	Ends *StreamEnds `json:"ends,omitempty"`
	// WaitingForInput says the process waits for input: one of its
	// processes (on a terminal, of the terminal's foreground group) is
	// blocked reading its terminal or its open stdin, when the read was
	// made. False where the executor cannot tell.
	WaitingForInput bool `json:"waitingForInput,omitempty"`
}

// StreamEnds are byte offsets in a process's stdout and stderr, counted
// from each stream's start.
type StreamEnds struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

// StderrSectionHeader opens the stderr part of an OutputRead delta.
const StderrSectionHeader = "[stderr]\n"

// ProcessExit is how a background process finished.
type ProcessExit struct {
	// ExitCode is nil when the process died from a signal or never started.
	ExitCode *int   `json:"exitCode"`
	Signal   string `json:"signal,omitempty"`
	// Killed is set when Kill, Close or the caller's cancellation ended the
	// process, or it failed to spawn; KillReason says which.
	Killed     bool   `json:"killed"`
	KillReason string `json:"killReason,omitempty"`
	DurationMs int64  `json:"durationMs"`
}

// IncompleteUTF8Tail is how many bytes at the end of p are a UTF-8
// character cut short (a lead byte and fewer continuation bytes than it
// announces): 0 when p ends on a whole character, or on bytes that are not
// UTF-8. A read of output that may go on keeps those bytes for the next.
func IncompleteUTF8Tail(p []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		if utf8.RuneStart(p[len(p)-i]) {
			if utf8.FullRune(p[len(p)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
