package pluginapi

import "unsafe"

// Background output crosses every process between a command and its
// reader (an agent, a plugin, the host) a megabyte at a time; a copy
// between the contract's string and the wire's bytes at each end of each
// hop cost a large allocation, its zeroing and its collection per read.
// These views share the memory instead, where the rules below make it
// safe.

// bytesOf is s's bytes, shared: for a message that is only read (marshalled)
// from then on. Nothing may write to them.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// stringOwning is b as a string, sharing its memory: b must be owned by
// the caller alone and never written again. Freshly unmarshalled bytes
// are: protobuf copies a bytes field out of the wire's buffer (which gRPC
// reuses), it never aliases it.
func stringOwning(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
