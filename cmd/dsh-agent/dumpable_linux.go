//go:build linux

package main

import "golang.org/x/sys/unix"

// notDumpable makes the agent not dumpable (PR_SET_DUMPABLE 0): its
// /proc entries then belong to root, and a process of the same user (the
// commands it runs, which exec and so are dumpable again) cannot read its
// memory or environment, or open its descriptors (the stream to the
// executor), through /proc or ptrace, which need CAP_SYS_PTRACE then.
func notDumpable() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
