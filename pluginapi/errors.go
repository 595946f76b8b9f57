package pluginapi

import "errors"

// The sentinel errors of the contract. An executor wraps them with the name
// of the case (fmt.Errorf("%w: %s", ErrUnusableWorkdir, dir)); they cross the
// wire intact, so errors.Is works on the host side of a plugin too.
var (
	// ErrUnusableWorkdir: the working directory is missing, not a directory,
	// or not accessible.
	ErrUnusableWorkdir = errors.New("pluginapi: unusable working directory")
	// ErrMissingShell: the shell executable cannot be found or started.
	ErrMissingShell = errors.New("pluginapi: missing shell")
	// ErrAbortedBeforeStart: the caller's context was done before the call.
	ErrAbortedBeforeStart = errors.New("pluginapi: aborted before start")
	// ErrSpecNotResolved: Run or Start got a spec that Resolve did not produce.
	ErrSpecNotResolved = errors.New("pluginapi: spec not resolved")
	// ErrInvalidRequest: Resolve cannot turn the request into a runnable spec.
	ErrInvalidRequest = errors.New("pluginapi: invalid request")
	// ErrInvalidSettings: the executor cannot apply its settings section.
	ErrInvalidSettings = errors.New("pluginapi: invalid settings")
	// ErrRequestTooLarge: the request does not fit in one message on the wire.
	ErrRequestTooLarge = errors.New("pluginapi: request too large")
	// ErrUnknownProcess: no background process has that id.
	ErrUnknownProcess = errors.New("pluginapi: unknown process")
	// ErrExecutorClosed: the executor was closed.
	ErrExecutorClosed = errors.New("pluginapi: executor closed")
	// ErrPluginUnavailable: the plugin process cannot be reached (it exited,
	// was killed, or the connection broke).
	ErrPluginUnavailable = errors.New("pluginapi: plugin unavailable")
	// ErrNotASpill: ReadSpill was asked for a path that is not one of the
	// executor's spill files.
	ErrNotASpill = errors.New("pluginapi: not a spill file of this executor")
	// ErrUnsupported: the executor does not offer the call (an optional
	// interface it does not implement, or a plugin older than the call).
	ErrUnsupported = errors.New("pluginapi: not supported by this executor")
	// ErrInputClosed: WriteInput or Resize on a process whose input is
	// closed (close_stdin closed it) or that has finished.
	ErrInputClosed = errors.New("pluginapi: input closed")
)
