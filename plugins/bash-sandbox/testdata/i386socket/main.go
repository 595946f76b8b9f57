// Command i386socket asks the kernel for a socket through the i386 system
// call entry (int $0x80) of a 64-bit process, which a seccomp filter for
// x86-64 alone does not see: by socket (i386 number 359) and by socketcall
// (102, SYS_SOCKET). It prints "i386-ran", then a line per call: "<call>
// fd <n>" when it got a socket, "<call> errno <n> (<text>)" when not, and
// "<call> faults: no i386 entry (...)" on a kernel without one (IA32
// emulation off), where int $0x80 raises SIGSEGV in every process.
//
// Usage: i386socket inet|unix-dgram
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"syscall"
	"unsafe"
)

// socket386 is socket(family, typ, proto) through int $0x80.
func socket386(family, typ, proto uint32) int32

// socketcall386 is socketcall(call, args) through int $0x80; args is a
// 32-bit address.
func socketcall386(call, args uint32) int32

// sysSocket is socketcall's call number of socket.
const sysSocket = 1

// socketcallArgs are socketcall's arguments: a global, below 4 GiB in a
// binary that is not position independent (the Go heap is not).
var socketcallArgs [3]uint32

func main() {
	var family, typ uint32
	switch strings.Join(os.Args[1:], " ") {
	case "inet":
		family, typ = syscall.AF_INET, syscall.SOCK_STREAM
	case "unix-dgram":
		family, typ = syscall.AF_UNIX, syscall.SOCK_DGRAM
	default:
		fmt.Fprintln(os.Stderr, "usage: i386socket inet|unix-dgram")
		os.Exit(2)
	}
	fmt.Println("i386-ran")
	debug.SetPanicOnFault(true) // a faulting int $0x80 panics, and is reported
	report("socket", func() int32 { return socket386(family, typ, 0) })
	socketcallArgs = [3]uint32{family, typ, 0}
	addr := uintptr(unsafe.Pointer(&socketcallArgs))
	if addr >= 1<<32 {
		fmt.Printf("socketcall unusable: its arguments are at %#x, above 4 GiB\n", addr)
		return
	}
	report("socketcall", func() int32 { return socketcall386(sysSocket, uint32(addr)) })
}

func report(call string, f func() int32) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Printf("%s faults: no i386 entry (%v)\n", call, p)
		}
	}()
	r := f()
	if r >= 0 {
		fmt.Printf("%s fd %d\n", call, r)
		syscall.Close(int(r))
		return
	}
	fmt.Printf("%s errno %d (%v)\n", call, -r, syscall.Errno(-r))
}
