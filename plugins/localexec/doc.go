// Package localexec holds the mechanics every local shell executor shares:
// resolving requests against defaults and caps, spawning a command in its own
// process group with a model-friendly environment, one fused deadline for the
// timeout and the caller's cancellation, collecting output, and terminating
// whole process trees.
//
// bash-local, bash-sandbox and pwsh-local are each a Config of this package's
// Executor: what differs between them is the argv a command becomes.
package localexec
