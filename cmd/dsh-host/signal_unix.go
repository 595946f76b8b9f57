//go:build unix

package main

import "golang.org/x/sys/unix"

// signalNumber is the number of the signal named name ("SIGKILL"), or 0.
func signalNumber(name string) int { return int(unix.SignalNum(name)) }
