// Command probe tries, from inside a container, each way out of its
// confinement that the container executor's seccomp profile closes, and
// prints one line per try: "<name> ok" when the kernel let it through,
// "<name> errno <n>" when a call failed, "<name> killed <signal>" when it
// killed the try. The tries that could change something are made to
// change nothing (limits read, not set; a namespace in a child that exits
// at once). It uses the syscall package alone, so that it builds with no
// module download.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// System call numbers the syscall package lacks; io_uring_setup's is the
// same on every architecture (from Linux 5.1 on, numbers are shared).
const sysIoUringSetup = 425

// Socket families the syscall package lacks.
const afVsock = 40

// ioUringParams is struct io_uring_params: 120 bytes, zero asks for the
// defaults.
type ioUringParams [120]byte

func main() {
	if len(os.Args) == 3 && os.Args[1] == "bind-unix" {
		// A socket file at the path: one end of a socket pair, bound
		// (bind makes a name, as mknod and open do).
		try("bind-unix", func() error {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				return err
			}
			defer syscall.Close(fds[0])
			defer syscall.Close(fds[1])
			return unwrap(syscall.Bind(fds[0], &syscall.SockaddrUnix{Name: os.Args[2]}))
		})
		return
	}
	if len(os.Args) == 2 {
		switch os.Args[1] {
		case "i386-socket":
			i386Socket()
		case "exit":
		}
		return
	}
	// (unshare(2) of a user namespace needs a process of one thread,
	// which a Go program is not: busybox's unshare tries that.)
	try("clone-newuser", func() error {
		// A child in a new user namespace: clone(2) with CLONE_NEWUSER.
		cmd := exec.Command("/proc/self/exe", "exit")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		err := cmd.Start()
		if err == nil {
			_ = cmd.Wait()
		}
		return unwrap(err)
	})
	try("io_uring_setup", func() error {
		var p ioUringParams
		fd, _, e := syscall.Syscall(sysIoUringSetup, 1, uintptr(unsafe.Pointer(&p)), 0)
		if e != 0 {
			return e
		}
		syscall.Close(int(fd))
		return nil
	})
	try("keyctl", func() error {
		// KEYCTL_GET_KEYRING_ID (0) of the session keyring (-3), not
		// created: it reads.
		_, _, e := syscall.Syscall(syscall.SYS_KEYCTL, 0, ^uintptr(2), 0)
		return errnoOrNil(e)
	})
	try("process_vm_readv", func() error {
		// Reads a word of its own memory, as it could another's.
		var src, dst uint64 = 42, 0
		local := syscall.Iovec{Base: (*byte)(unsafe.Pointer(&dst)), Len: 8}
		remote := syscall.Iovec{Base: (*byte)(unsafe.Pointer(&src)), Len: 8}
		_, _, e := syscall.Syscall6(sysProcessVMReadv, uintptr(os.Getpid()), uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
		return errnoOrNil(e)
	})
	try("prlimit-of-init", func() error {
		// Reads (does not set) the limits of the container's PID 1.
		var old syscall.Rlimit
		_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 1, syscall.RLIMIT_NOFILE, 0, uintptr(unsafe.Pointer(&old)), 0, 0)
		return errnoOrNil(e)
	})
	try("prlimit-own", func() error {
		var old syscall.Rlimit
		_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, syscall.RLIMIT_NOFILE, 0, uintptr(unsafe.Pointer(&old)), 0, 0)
		return errnoOrNil(e)
	})
	for _, s := range []struct {
		name               string
		family, typ, proto int
	}{
		{"socket-vsock", afVsock, syscall.SOCK_STREAM, 0},
		{"socket-netlink", syscall.AF_NETLINK, syscall.SOCK_RAW, 0},
		{"socket-inet", syscall.AF_INET, syscall.SOCK_STREAM, 0},
		{"socket-inet6", syscall.AF_INET6, syscall.SOCK_DGRAM, 0},
		{"socket-unix", syscall.AF_UNIX, syscall.SOCK_STREAM, 0},
	} {
		try(s.name, func() error {
			fd, err := syscall.Socket(s.family, s.typ, s.proto)
			if err == nil {
				syscall.Close(fd)
			}
			return err
		})
	}
	if runtime.GOARCH == "amd64" {
		// Through the i386 entry, in a child: a filter may kill it, or
		// kill the thread that made the call (the process then never
		// exits: its other threads go on).
		try("i386-socket-inet", i386Child)
	}
}

// i386Child runs the i386 socket try in a child, and tells what became
// of it.
func i386Child() error {
	cmd := exec.Command("/proc/self/exe", "i386-socket")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return killed{ws.Signal()}
				}
			}
			if err != nil {
				return err
			}
			var n int
			if _, err := fmt.Sscanf(out.String(), "errno %d", &n); err == nil {
				return syscall.Errno(n)
			}
			if out.String() != "ok\n" {
				return fmt.Errorf("unexpected %q", out.String())
			}
			return nil
		case <-time.After(20 * time.Millisecond):
			// A leader gone while other threads live: a thread was
			// killed.
			status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
			if strings.Contains(string(status), "State:\tZ") && !strings.Contains(string(status), "Threads:\t1\n") {
				_ = cmd.Process.Kill()
				<-done
				return killed{syscall.SIGSYS}
			}
		}
	}
}

// killed is a try the kernel killed.
type killed struct{ sig syscall.Signal }

func (k killed) Error() string { return "killed" }

// try prints the outcome of f.
func try(name string, f func() error) {
	err := f()
	var e syscall.Errno
	var k killed
	switch {
	case err == nil:
		fmt.Printf("%s ok\n", name)
	case errors.As(err, &e):
		fmt.Printf("%s errno %d\n", name, int(e))
	case errors.As(err, &k):
		fmt.Printf("%s killed %d\n", name, int(k.sig))
	default:
		fmt.Printf("%s error %v\n", name, err)
	}
}

func errnoOrNil(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// unwrap is the errno beneath err, or err.
func unwrap(err error) error {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}
