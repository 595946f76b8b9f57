// Package localexec holds the mechanics every local shell executor shares:
// resolving requests against defaults and caps, spawning a command in its own
// process group with a model-friendly environment, one fused deadline for the
// timeout and the caller's cancellation, collecting output, and terminating
// whole process trees; for an executor configured Interactive, a background
// process on a terminal or with an open stdin, input written to it, and
// whether it waits for input.
//
// bash-local, bash-sandbox and pwsh-local are each a Config of this package's
// Executor: what differs between them is the argv a command becomes.
package localexec
