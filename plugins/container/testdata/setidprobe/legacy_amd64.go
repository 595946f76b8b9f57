package main

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// legacy tries the calls amd64 has and arm64 never had.
func legacy(suid uint32) {
	path := func(s string) uintptr { p, _ := unix.BytePtrFromString(s); return uintptr(unsafe.Pointer(p)) }
	r, _, e := unix.Syscall(unix.SYS_OPEN, path("open-suid"), unix.O_CREAT|unix.O_WRONLY, uintptr(suid))
	if e == 0 {
		unix.Close(int(r))
	}
	report("open-creat-suid", errnoOf(e))
	r, _, e = unix.Syscall(unix.SYS_CREAT, path("creat-suid"), uintptr(suid), 0)
	if e == 0 {
		unix.Close(int(r))
	}
	report("creat-suid", errnoOf(e))
	r, _, e = unix.Syscall(unix.SYS_OPEN, path("chmod"), unix.O_CREAT|unix.O_WRONLY, 0o755)
	if e == 0 {
		unix.Close(int(r))
	}
	_, _, e = unix.Syscall(unix.SYS_CHMOD, path("chmod"), uintptr(suid), 0)
	report("chmod-suid", errnoOf(e))
	_, _, e = unix.Syscall(unix.SYS_MKNOD, path("mknod-suid"), uintptr(unix.S_IFREG|suid), 0)
	report("mknod-suid", errnoOf(e))
}
