//go:build !linux

package main

import (
	"errors"
	"io"
)

// takeStdio refuses: the agent is built for Linux targets (a container,
// another machine).
func takeStdio() (io.ReadWriteCloser, error) {
	return nil, errors.New("dsh-agent runs on Linux only")
}
