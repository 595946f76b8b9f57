//go:build !linux

package main

// notDumpable has nothing to do where there is no PR_SET_DUMPABLE.
func notDumpable() error { return nil }
