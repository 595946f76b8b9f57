// Command setidprobe tries, in its working directory, every system call
// that could leave a file with a set-uid or set-gid bit, and prints a line
// per call: "<call> ok" when the call succeeded, "<call> errno <n> (<text>)"
// when not. The container tests run it inside a container, in its
// workspace, and then look at the files from the engine's machine.
package main

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

func report(call string, err error) {
	if err == nil {
		fmt.Println(call, "ok")
		return
	}
	if errno, ok := err.(unix.Errno); ok {
		fmt.Printf("%s errno %d (%v)\n", call, int(errno), errno)
		return
	}
	fmt.Println(call, "error", err)
}

func errnoOf(e unix.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func main() {
	const suid = unix.S_ISUID | 0o755
	const sgid = unix.S_ISGID | 0o755
	at := func(path string, flags int, mode uint32) error {
		fd, err := unix.Openat(unix.AT_FDCWD, path, flags, mode)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	report("plain", at("plain", unix.O_CREAT|unix.O_WRONLY, 0o755))
	report("openat-creat-suid", at("openat-suid", unix.O_CREAT|unix.O_WRONLY, suid))
	report("openat-creat-sgid", at("openat-sgid", unix.O_CREAT|unix.O_WRONLY, sgid))
	if fd, err := unix.Openat(unix.AT_FDCWD, ".", unix.O_TMPFILE|unix.O_WRONLY, suid); err != nil {
		report("openat-tmpfile-suid", err)
	} else {
		report("openat-tmpfile-suid", unix.Linkat(fd, "", unix.AT_FDCWD, "tmpfile-suid", unix.AT_EMPTY_PATH))
		unix.Close(fd)
	}
	fd, err := unix.Openat(unix.AT_FDCWD, "fchmod", unix.O_CREAT|unix.O_WRONLY, 0o755)
	if err == nil {
		report("fchmod-suid", unix.Fchmod(fd, suid))
		unix.Close(fd)
	}
	_ = at("fchmodat", unix.O_CREAT|unix.O_WRONLY, 0o755)
	report("fchmodat-suid", unix.Fchmodat(unix.AT_FDCWD, "fchmodat", suid, 0))
	_ = at("fchmodat2", unix.O_CREAT|unix.O_WRONLY, 0o755)
	p, _ := unix.BytePtrFromString("fchmodat2")
	cwd := unix.AT_FDCWD
	_, _, e := unix.Syscall6(452, uintptr(cwd), uintptr(unsafe.Pointer(p)), suid, 0, 0, 0) // fchmodat2
	report("fchmodat2-suid", errnoOf(e))
	report("mknodat-suid", unix.Mknodat(unix.AT_FDCWD, "mknodat-suid", unix.S_IFREG|suid, 0))
	how := unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: suid}
	if fd, err := unix.Openat2(unix.AT_FDCWD, "openat2-suid", &how); err != nil {
		report("openat2-suid", err)
	} else {
		report("openat2-suid", nil)
		unix.Close(fd)
	}
	var params [120]byte // struct io_uring_params
	r, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
	if e == 0 {
		unix.Close(int(r))
	}
	report("io_uring_setup", errnoOf(e))
	if runtime.GOARCH == "amd64" {
		legacy(suid)
	}
}
