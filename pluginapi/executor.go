package pluginapi

import (
	"context"
	"fmt"
)

// SettingsNamespace is the settings section every shell executor registers,
// whatever its implementation: it names the capability, not the provider.
const SettingsNamespace = "shell"

// ServiceShell is the service name a shell executor provides to a host.
const ServiceShell = "shell"

// SandboxPolicySetting is the settings key of a sandboxing executor's
// policy (the sandboxPolicy service): its settings schema declares it, and
// a host fills it from the settings file's sandbox section.
const SandboxPolicySetting = "sandboxPolicy"

// SpillDirSetting is the settings key of the directory an executor keeps
// its spill files in, where its schema declares it: a host that keeps
// spill files of its own (a directory that outlives a plugin that dies)
// fills it, unless the settings name one.
const SpillDirSetting = "spillDir"

// ShellExecutor runs shell commands. Every method takes ctx first.
//
// Cancelling ctx means: for Describe, Resolve, Close, ReadOutput, Kill and
// Wait, the caller stopped waiting; for Run, abort the command (the seam's
// AbortSignal: the result settles with Aborted set); for Start, kill the
// background process (it otherwise runs until Kill or Close).
type ShellExecutor interface {
	// Describe says who the executor is and what it offers.
	Describe(ctx context.Context) (Description, error)
	// Resolve fills defaults into req and caps every field. Run and Start
	// accept only what Resolve returned.
	Resolve(ctx context.Context, req ExecRequest) (ExecSpec, error)
	// Run executes spec in the foreground and returns when it has finished.
	// It returns an error only for infrastructure failures (ErrUnusableWorkdir,
	// ErrMissingShell, ErrAbortedBeforeStart, ErrSpecNotResolved, a broken
	// connection); a nonzero exit, a timeout kill and an abort kill are
	// described by the result.
	Run(ctx context.Context, spec ExecSpec) (RunResult, error)
	// Start begins spec in the background and returns at once. It ignores
	// TimeoutMs: the process runs until it exits, Kill, Close, or ctx is done.
	Start(ctx context.Context, spec ExecSpec) (ShellProcess, error)
	// Close terminates and awaits every process the executor still runs.
	// It is safe to call more than once.
	Close(ctx context.Context) error
}

// LiveRunner is implemented by executors that can report a foreground
// command's output while it runs. onOutput is called from one goroutine at a
// time, in the order the bytes were read; it must not retain data.
type LiveRunner interface {
	RunLive(ctx context.Context, spec ExecSpec, onOutput func(stream Stream, data []byte)) (RunResult, error)
}

// Configurable is implemented by executors that take settings: the host
// hands them their section of the settings (SettingsNamespace), as JSON,
// before the first command. An executor rejects what it does not know with
// ErrInvalidSettings, naming the key.
type Configurable interface {
	Configure(ctx context.Context, settings []byte) error
}

// RequestRunner is implemented by executors that resolve and run a request
// in one call; over the wire that saves a round trip. The executor's own Run
// still receives only the spec its Resolve returned.
type RequestRunner interface {
	RunRequest(ctx context.Context, req ExecRequest, onOutput func(stream Stream, data []byte)) (RunResult, error)
}

// RunRequest resolves req with x and runs the spec, in one round trip when x
// is a RequestRunner. onOutput, when not nil, receives the output: as it
// comes where x can report it live, else the collected text at the end.
func RunRequest(ctx context.Context, x ShellExecutor, req ExecRequest, onOutput func(Stream, []byte)) (RunResult, error) {
	if rr, ok := x.(RequestRunner); ok {
		return rr.RunRequest(ctx, req, onOutput)
	}
	spec, err := x.Resolve(ctx, req)
	if err != nil {
		return RunResult{}, err
	}
	if live, ok := x.(LiveRunner); ok && onOutput != nil {
		return live.RunLive(ctx, spec, onOutput)
	}
	res, err := x.Run(ctx, spec)
	if err == nil && onOutput != nil {
		onOutput(Stdout, []byte(res.Stdout.Text))
		onOutput(Stderr, []byte(res.Stderr.Text))
	}
	return res, err
}

// Releaser is implemented by a ShellProcess that can be forgotten once it
// has finished and its owner has read what it wanted: what the executor
// keeps of it (its unread output) goes. A process still running is not
// released.
type Releaser interface {
	Release(ctx context.Context) error
}

// SpillReader is implemented by executors that read their spill files
// for the host, where their commands run: a spill path names a file there
// (the model reads it with its next command), which may be on another
// machine than the host's. ReadSpill returns up to max bytes of the file
// path from offset (none at or past its end), with the file's size. It
// refuses, with ErrNotASpill, any path that is not a spill file of the
// executor's: a file directly in one of its spill directories, not a
// link.
type SpillReader interface {
	ReadSpill(ctx context.Context, path string, offset int64, max int) (SpillChunk, error)
}

// PartitionCloser is implemented by executors that keep requests of
// different partitions (ExecRequest.Partition) apart in something that
// outlives a command, a container say. ClosePartition ends partition: it
// kills what still runs there and removes what the executor keeps for it.
// A later request of the same partition starts afresh. A host calls it
// when the partition's owner is gone and its jobs are over (an MCP
// session closed, its jobs' grace passed).
type PartitionCloser interface {
	ClosePartition(ctx context.Context, partition string) error
}

// ClosePartition ends partition in x when x partitions; otherwise there is
// nothing to end, and it returns nil.
func ClosePartition(ctx context.Context, x ShellExecutor, partition string) error {
	if pc, ok := x.(PartitionCloser); ok {
		return pc.ClosePartition(ctx, partition)
	}
	return nil
}

// SpillChunk is what one ReadSpill read: the bytes from its offset, and
// the file's size when it was read.
type SpillChunk struct {
	Data []byte
	Size int64
}

// MaxSpillRead is the most one ReadSpill returns: larger reads are cut
// to it (a message on the wire stays well under its 4 MiB bound).
const MaxSpillRead = 1 << 20

// SpillNamer is implemented by a ShellProcess that names its spill files
// from its start (before any read): the files that will hold its stdout and
// stderr in full, or "" for a stream it does not spill. A host that loses
// the executor before it read the process still knows where its output is.
type SpillNamer interface {
	SpillPaths() (stdout, stderr string)
}

// ShellProcess is a background process started by ShellExecutor.Start.
type ShellProcess interface {
	// ID names the process within its executor.
	ID() string
	// Kill terminates the process and its descendants. It reports false when
	// the process had already finished. Safe to call more than once.
	Kill(ctx context.Context) (bool, error)
	// ReadOutput returns what the process wrote since the previous read,
	// sized for a model: at most the spec's StdoutMaxBytes of stdout and
	// StderrMaxBytes of stderr. What a read cannot take waits for the next
	// one, or is dropped (Lossy) past the executor's unread buffer; the
	// spill files keep every byte, for ReadSpill. Consecutive reads never
	// deliver the same bytes twice.
	ReadOutput(ctx context.Context) (OutputRead, error)
	// Wait blocks until the process has finished, or ctx is done. A process
	// always finishes: a spawn failure finishes as killed, its error on stderr.
	Wait(ctx context.Context) (ProcessExit, error)
}

// InputWriter is implemented by a ShellProcess that takes input while it
// runs: one started with a terminal or an open stdin
// (ExecRequest.Terminal, ExecRequest.OpenStdin), by an executor whose
// Description.Input says so. WriteInput writes data to the process's
// input, as it is (on a terminal "\x03" is Ctrl-C), and then, when
// closeStdin is set, closes it: a pipe's end (the process reads EOF), or
// on a terminal its end-of-file character (Ctrl-D), the terminal staying.
// It blocks until data is written or ctx is done. It fails with
// ErrInputClosed once the input is closed or the process has finished,
// and with ErrUnsupported for a process started without open input.
type InputWriter interface {
	WriteInput(ctx context.Context, data []byte, closeStdin bool) error
}

// Resizer is implemented by a ShellProcess whose terminal can be resized,
// by an executor whose Description.Terminals says so: its processes get
// SIGWINCH. Rows and cols are within [1, MaxTerminalSize]. It fails with
// ErrUnsupported for a process started without a terminal, and with
// ErrInputClosed once the process has finished.
type Resizer interface {
	Resize(ctx context.Context, rows, cols int) error
}

// WriteInput writes data to p's input (InputWriter), or fails with
// ErrUnsupported when p takes none.
func WriteInput(ctx context.Context, p ShellProcess, data []byte, closeStdin bool) error {
	w, ok := p.(InputWriter)
	if !ok {
		return fmt.Errorf("%w: process %q takes no input (pluginapi.InputWriter)", ErrUnsupported, p.ID())
	}
	return w.WriteInput(ctx, data, closeStdin)
}

// Resize sets the size of p's terminal (Resizer), or fails with
// ErrUnsupported when p has none.
func Resize(ctx context.Context, p ShellProcess, rows, cols int) error {
	if err := CheckTerminalSize(rows, cols); err != nil {
		return err
	}
	r, ok := p.(Resizer)
	if !ok {
		return fmt.Errorf("%w: process %q has no terminal to resize (pluginapi.Resizer)", ErrUnsupported, p.ID())
	}
	return r.Resize(ctx, rows, cols)
}

// CheckOffers says, with ErrUnsupported, what req asks for that the
// executor d describes does not offer: a terminal, or open input. A host
// checks it before Resolve, so a plugin built before terminals (whose
// Describe says neither, and whose Resolve would drop what it does not
// know) is refused instead of running the command without them.
func CheckOffers(d Description, req ExecRequest) error {
	switch {
	case req.Terminal != nil && !d.Terminals:
		return fmt.Errorf("%w: executor %q does not support terminals (built before shellexec terminals, or does not offer them)",
			ErrUnsupported, d.Name)
	case req.OpenStdin && !d.Input:
		return fmt.Errorf("%w: executor %q does not support input to a running command (built before shellexec input, or does not offer it)",
			ErrUnsupported, d.Name)
	}
	return nil
}

// CheckForeground refuses, with ErrInvalidRequest, a spec that asks for
// what only Start gives: a terminal or an open stdin cannot go with a
// foreground Run, whose caller has no process to write to.
func CheckForeground(terminal *Terminal, openStdin bool) error {
	switch {
	case terminal != nil:
		return fmt.Errorf("%w: a terminal is for a background process (Start), not Run", ErrInvalidRequest)
	case openStdin:
		return fmt.Errorf("%w: an open stdin is for a background process (Start), not Run", ErrInvalidRequest)
	}
	return nil
}
