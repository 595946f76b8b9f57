//go:build arm64

package main

import "fmt"

// i386Socket: only x86-64 has an i386 entry.
func i386Socket() { fmt.Println("errno 38") }

// sysProcessVMReadv is process_vm_readv's number on arm64, which the
// syscall package lacks.
const sysProcessVMReadv = 270
