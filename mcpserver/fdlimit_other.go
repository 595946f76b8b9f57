//go:build !unix

package mcpserver

// descriptorLimit is 0, unknown: the platform has no such limit to read.
func descriptorLimit() int { return 0 }
