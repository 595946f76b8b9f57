//go:build !unix

package main

// signalNumber is 0: there are no POSIX signal numbers here.
func signalNumber(string) int { return 0 }
