//go:build linux && cgo

package confine

/*
#cgo LDFLAGS: -Wl,-z,now
#include <stdlib.h>
#include <string.h>
#include "runinit_linux.h"
*/
import "C"

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// haveRunInit says whether this build has the per-run init (it needs cgo).
const haveRunInit = true

// sharedVM says whether a run's init shares its starter's address space
// (amd64 and arm64, where it makes its system calls itself).
const sharedVM = C.DSH_SHARED_VM != 0

// initStack is the size of an init's own stack (its command's process
// maps one of its own).
const initStack = 64 << 10

// initMem is a run's init's C memory: its dsh_init and its stack, which
// live until it is reaped (it may share this process's address space).
type initMem struct {
	init  *C.struct_dsh_init
	frees []unsafe.Pointer
	// stack is the init's stack, its lowest page a guard.
	stack []byte
}

// release unmaps what the reaped init left mapped, and frees its memory.
func (m *initMem) release() {
	if m == nil {
		return
	}
	C.dsh_release_init(m.init)
	for _, p := range m.frees {
		C.free(p)
	}
	m.frees = nil
	if m.stack != nil {
		_ = unix.Munmap(m.stack)
		m.stack = nil
	}
}

// mapped lists the start of each mapping the init (or its command's
// process) still has in this process's address space.
func (m *initMem) mapped() []uintptr {
	var starts []uintptr
	for i := range C.DSH_MAPS {
		if p := m.init.maps[i]; p != nil {
			starts = append(starts, uintptr(p))
		}
	}
	return starts
}

// startInit starts a run's init (runinit_linux.c) in new namespaces, ready
// for its run, and returns its pid and its memory, to release once it is
// reaped. Call it from the thread that outlives the init: the init dies
// with the thread that started it.
func startInit(w *initSpec) (int, *initMem, error) {
	m := &initMem{}
	alloc := func(n int) unsafe.Pointer {
		if n == 0 {
			n = 1
		}
		p := C.calloc(C.size_t(n), 1)
		m.frees = append(m.frees, p)
		return p
	}

	init := (*C.struct_dsh_init)(alloc(int(unsafe.Sizeof(C.struct_dsh_init{}))))
	m.init = init
	init.ctl = C.int(w.ctl)
	init.life = C.int(w.life)
	init.landlock = C.int(w.landlock)
	if n := len(w.filters); n > 0 {
		fs := (*[64]C.struct_dsh_filter)(alloc(n * int(unsafe.Sizeof(C.struct_dsh_filter{}))))[:n:n]
		for i, prog := range w.filters {
			size := len(prog) * int(unsafe.Sizeof(unix.SockFilter{}))
			code := alloc(size)
			C.memcpy(code, unsafe.Pointer(&prog[0]), C.size_t(size))
			fs[i].len = C.ushort(len(prog))
			fs[i].code = code
		}
		init.filters, init.nfilters = &fs[0], C.int(n)
	}
	if n := len(w.rlimits); n > 0 {
		ls := (*[64]C.struct_dsh_rlimit)(alloc(n * int(unsafe.Sizeof(C.struct_dsh_rlimit{}))))[:n:n]
		for i, l := range w.rlimits {
			ls[i].resource = C.int(l.resource)
			ls[i].lim.rlim_cur = C.rlim_t(l.cur)
			ls[i].lim.rlim_max = C.rlim_t(l.max)
		}
		init.rlimits, init.nrlimits = &ls[0], C.int(n)
	}
	init.cloneflags = C.ulong(w.cloneflags)
	if w.mountProc {
		init.mount_proc = 1
	}
	init.processes = C.long(w.processes)
	if w.background {
		init.background = 1
	}
	// Its own mapping, whose lowest page faults: an init that overran its
	// stack dies, rather than writing over this process's memory.
	stack, err := unix.Mmap(-1, 0, initStack, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK)
	if err != nil {
		m.release()
		return 0, nil, err
	}
	m.stack = stack
	if err := unix.Mprotect(stack[:os.Getpagesize()], unix.PROT_NONE); err != nil {
		m.release()
		return 0, nil, err
	}
	pid := int(C.dsh_start_init(init, unsafe.Pointer(&stack[0]), initStack))
	if pid < 0 {
		m.release()
		return 0, nil, syscall.Errno(-pid)
	}
	return pid, m, nil
}

// The run's wire format, as runinit_linux.h defines it.
const (
	runKind      = C.DSH_RUN
	runStdin     = C.DSH_RUN_STDIN
	runChunk     = C.DSH_RUN_CHUNK
	runMaxSize   = C.DSH_RUN_MAX_SIZE
	runMaxGroups = C.DSH_RUN_MAX_CGROUPS
	runHeaderLen = C.sizeof_struct_dsh_run_header
)
