package main

import (
	"fmt"
	"syscall"
)

// socket386 is socket(family, typ, proto) through int $0x80 (i386
// number 359).
func socket386(family, typ, proto uint32) int32

// i386Socket asks for an AF_INET socket through the i386 entry and prints
// "ok" or "errno <n>".
func i386Socket() {
	r := socket386(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if r >= 0 {
		fmt.Println("ok")
		return
	}
	fmt.Printf("errno %d\n", -r)
}

// sysProcessVMReadv is process_vm_readv's number, which the syscall
// package lacks.
const sysProcessVMReadv = 310
