package localexec

import (
	"os"

	"golang.org/x/sys/unix"
)

// bulkPipeBytes is the size of a pipe whose output is read in bulk (a
// background process's stdout): the default 64 KiB has a fast writer and
// its reader wake each other every few KiB, and the context switches,
// not the copying, then bound the throughput (a megabyte measured about
// a fifth more through a container). The kernel charges the size to the
// user's pipe pages (fs.pipe-user-pages-soft), which is why only those
// pipes get it.
const bulkPipeBytes = 1 << 20

// growPipe makes the pipe r reads bulkPipeBytes long, and says whether it
// did: it leaves it as it is where the kernel refuses (past
// fs.pipe-max-size, or the user's pipe pages).
func growPipe(r *os.File) bool {
	rc, err := r.SyscallConn()
	if err != nil {
		return false
	}
	size := 0
	_ = rc.Control(func(fd uintptr) { size, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, bulkPipeBytes) })
	return size >= bulkPipeBytes
}
