// Package confine is bash-sandbox's confinement: a Policy (mode, writable
// roots, network) applied to a process with Landlock, seccomp and
// no_new_privs, and the confined spawner that starts commands under it.
// Apply runs only in the spawner, a re-execution of the plugin binary
// (HelperMain), never in the plugin process itself. Where the kernel cannot
// enforce a policy, nothing runs: the error says what was missing.
package confine
