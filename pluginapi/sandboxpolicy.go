package pluginapi

// SandboxPolicy is the sandbox policy of the executors that sandbox
// (bash-sandbox, container), the one definition they parse: a settings
// file's sandbox section, handed to the executor under
// SandboxPolicySetting. A Go host sets it typed (host.Options.SandboxPolicy)
// instead of writing JSON. A zero field takes the executor's default.
type SandboxPolicy struct {
	// DefaultMode is the mode of a command that asks for none:
	// SandboxReadOnly, SandboxWorkspaceWrite (the default) or
	// SandboxDangerFullAccess.
	DefaultMode SandboxMode `json:"defaultMode,omitempty"`
	// WritableRoots are absolute directories commands may write beneath in
	// workspace-write, besides the workdir and a private tmp. No executor
	// binary may lie beneath one unless its checksum is pinned.
	WritableRoots []string `json:"writableRoots,omitempty"`
	// Network lets commands reach the network.
	Network bool `json:"network,omitempty"`
	// ProtectedPaths extend the paths that stay read-only (and cannot be
	// created) within writable roots (.git/hooks, shell rc files, ...):
	// relative to each root, or absolute. UnprotectedPaths take defaults
	// off, each named exactly as the defaults name it.
	ProtectedPaths   []string `json:"protectedPaths,omitempty"`
	UnprotectedPaths []string `json:"unprotectedPaths,omitempty"`
	// Limits bound what one run (a container: all its commands) may take.
	Limits SandboxLimits `json:"limits,omitzero"`
}

// SandboxLimits bound what confined commands may take. A nil field takes
// the executor's default; 0 means what its settings schema says (no bound
// for Processes and MemoryMiB, half the memory for TmpMiB).
type SandboxLimits struct {
	// Processes bounds processes and threads (default 2048).
	Processes *int64 `json:"processes,omitempty"`
	// TmpMiB is the size of the private tmpfs (default 1024).
	TmpMiB *int64 `json:"tmpMiB,omitempty"`
	// MemoryMiB bounds memory (default 0: no bound).
	MemoryMiB *int64 `json:"memoryMiB,omitempty"`
}
