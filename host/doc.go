// Package host launches shell executor plugins and serves the mounted
// executor to Go programs: an agent host embeds it to run commands, jobs
// and the model-facing bash tool (package mcpserver serves them over MCP).
//
// # Entry points
//
// StartRuntime starts a Runtime: one executor mounted as the shell, which
// Runtime.Reload swaps for a fresh plugin process while calls keep being
// served (Runtime.ReloadOnSignal, Runtime.WatchBinary), restarted with
// backoff when its plugin dies, with background jobs (Runtime.Jobs) and
// new settings (Runtime.Configure). Runtime.Close terminates and joins
// everything the executor started. Setup (setup.go) resolves executors as
// the dsh-host command does, from names, the plugin directory and the
// settings file with its checksum pins, and Setup.StartRuntime starts the
// runtime with the file's shell and sandbox sections. Launch mounts one
// plugin without reloads, Mount several that register distinct services,
// and NewBashTool is the model-facing bash tool over a Runtime's shell.
//
// # What an embedder calls
//
// A program that launches the built-in executors (BuiltinExecutor, or
// Setup.Builtins set to builtins.Names()) is itself their plugin process:
// the host re-executes the running image to serve one. Its main must call
// builtins.ServeIfAsked (package plugins/builtins) first thing, before it
// parses flags or writes to stdout; Launch refuses to go on in a process
// started to serve an executor.
//
//	func main() {
//		builtins.ServeIfAsked()
//		r, _, err := host.Setup{Builtins: builtins.Names(), DefaultExecutor: "bash-local"}.StartRuntime(ctx)
//		...
//		defer r.Close(ctx)
//	}
//
// # The handshake
//
// Every executor runs out of process, through go-plugin over gRPC only:
// pluginapi.Handshake (its magic cookie and pluginapi.ProtocolVersion) and
// pluginapi.PluginSets negotiate the contract; the socket lies in a private
// directory of the host's; the connection is mutual TLS on keys the host
// makes for both ends (pluginapi.ConnectionKeys), the plugin's share handed
// on an inherited pipe named by DSH_PLUGIN_TLS_FD (pluginapi.TLSFDVar),
// never through its environment. Executor.Checksum pins a binary's
// SHA-256. The host then checks Describe: the shell service, in the
// "shell" settings namespace.
//
// # Sandbox policy and binary placement
//
// Options.SandboxPolicy sets a sandboxing executor's policy
// (pluginapi.SandboxPolicy) from Go, instead of JSON in Options.Settings;
// set both, or set it for an executor that does not sandbox, and the
// launch is refused. No executor binary may lie where a command could
// replace it unless its checksum pins it: every launch refuses one beneath
// Options.WritableRoots or the policy's writable roots before it runs, and
// once the executor has its settings, one beneath where Describe says its
// commands can write (pluginapi.HostReach), which includes Options.Workdirs
// (the current directory when empty) for an executor whose commands write
// their workdir. Leaving either option out narrows nothing the host can
// know.
package host
