//go:build linux

package localexec

import (
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// drainBuffered copies to w the bytes r's pipe holds now (FIONREAD, which
// Linux also names TIOCINQ), each read made once, never waiting: a writer
// still writing cannot keep it going past what was there.
func drainBuffered(w io.Writer, r *os.File) {
	rc, err := r.SyscallConn()
	if err != nil || r.SetReadDeadline(time.Time{}) != nil {
		return
	}
	left := 0
	if err := rc.Control(func(fd uintptr) { left, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return
	}
	buf := make([]byte, min(left, 64<<10))
	for left > 0 {
		n := 0
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf[:min(left, len(buf))])
			return true // one attempt: never wait for the poller
		})
		if err != nil || rerr != nil || n <= 0 {
			return
		}
		if _, err := w.Write(buf[:n]); err != nil {
			return
		}
		left -= n
	}
}
