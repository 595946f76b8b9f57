// Package confine is bash-sandbox's confinement: a Policy (mode, writable
// roots, network, limits), and the spawner that starts commands under it.
// The spawner, a re-execution of the plugin binary (HelperMain) in a mount
// namespace of its own, makes the mounts read-only but for the roots, gives
// /dev only harmless nodes, mounts the private TMPDIR, and prepares the
// Landlock ruleset and the seccomp filter. Each command then runs in new PID,
// IPC and mount namespaces under an init of its own (runinit_linux.c),
// which kills whatever the command leaves once its shell ends; the command
// drops every capability and enforces the ruleset and programs before it
// executes. In workspace-write the init also makes, for its command, every
// call that could make a name, refusing those that would make a new
// repository (runinit_guard_linux.c). The plugin process itself is never confined. Where the kernel
// cannot enforce a policy, nothing runs: the error says what was missing.
package confine
