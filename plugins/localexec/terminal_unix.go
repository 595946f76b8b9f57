//go:build unix

package localexec

import (
	"fmt"
	"os"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// terminalsHere says this platform gives commands pseudo-terminals.
const terminalsHere = true

// openTerminal opens a pseudo-terminal of rows and cols: its master, for
// this process (pollable, so a read can be given a deadline), its slave,
// for the command, and the slave's device number.
func openTerminal(rows, cols int) (master, slave *os.File, dev uint64, err error) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		return nil, nil, 0, fmt.Errorf("localexec: opening a terminal: %w", err)
	}
	// pty.Open leaves its master in blocking mode (it asked for its Fd):
	// a copy of the descriptor, non-blocking, goes to the poller.
	fd, err := unix.Dup(int(ptmx.Fd()))
	ptmx.Close()
	if err == nil {
		unix.CloseOnExec(fd)
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		tty.Close()
		return nil, nil, 0, fmt.Errorf("localexec: opening a terminal: %w", err)
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.Fd()), &st); err == nil {
		dev = uint64(st.Rdev)
	}
	if err := setTerminalSize(master, rows, cols); err != nil {
		master.Close()
		tty.Close()
		return nil, nil, 0, err
	}
	return master, tty, dev, nil
}

// setTerminalSize sets the size of master's terminal; the foreground
// group gets SIGWINCH.
func setTerminalSize(master *os.File, rows, cols int) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	}); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("localexec: resizing the terminal: %w", ierr)
	}
	return nil
}

// foregroundGroup is the foreground process group of master's terminal,
// or 0.
func foregroundGroup(master *os.File) int {
	rc, err := master.SyscallConn()
	if err != nil {
		return 0
	}
	pgid := 0
	_ = rc.Control(func(fd uintptr) { pgid, _ = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP) })
	return pgid
}

// hangup sends SIGHUP to the terminal's foreground group and to the
// shell's group, as a terminal that closes does: an interactive shell
// ignores SIGTERM, and passes SIGHUP on to its jobs before it exits. It
// reports whether the shell's group got it.
func hangup(master *os.File, pgid int) bool {
	if fg := foregroundGroup(master); fg > 1 && fg != pgid {
		_ = unix.Kill(-fg, unix.SIGHUP)
	}
	return pgid > 1 && unix.Kill(-pgid, unix.SIGHUP) == nil
}

// withCtty makes a command that leads a session of its own take its
// stdin, a terminal's slave, as its controlling terminal.
func withCtty(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	a.Setctty = true
	a.Ctty = 0
	return a
}

// inodeOf is f's inode number, or 0.
func inodeOf(f *os.File) uint64 {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return 0
	}
	return uint64(st.Ino)
}
