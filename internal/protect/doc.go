// Package protect is what confining executors keep read-only inside the
// roots they make writable: the paths that tools outside the sandbox
// execute from (git hooks and configuration, agent and editor
// configurations, shell rc files). A command may write its workspace, but
// nothing it writes there may run later, unconfined, as the user.
//
// Plan finds, in each writable root, the protected paths that exist and
// the places of those that do not; Hold makes a placeholder at such a
// place, for a mount to cover, and takes it away again once no sandbox
// needs it. The mounts themselves are the executor's.
package protect
