//go:build linux

package main

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// takeStdio takes the agent's stdin and stdout as its stream, and leaves
// /dev/null on fd 0 and stderr on fd 1: nothing else in the process, and
// nothing it starts, can read the stream or write into it.
func takeStdio() (io.ReadWriteCloser, error) {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		return nil, errors.New("stdin is a terminal: dsh-agent speaks gRPC on stdin and stdout, for an executor that starts it; see dsh-agent -h")
	}
	in, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	out, err := unix.FcntlInt(1, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		unix.Close(in)
		return nil, err
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Dup2(null, 0)
		unix.Close(null)
	}
	if err == nil {
		err = unix.Dup2(2, 1)
	}
	if err != nil {
		unix.Close(in)
		unix.Close(out)
		return nil, err
	}
	return pluginapi.Pipes(os.NewFile(uintptr(in), "stream-in"), os.NewFile(uintptr(out), "stream-out")), nil
}
