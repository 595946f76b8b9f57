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

// The parts of an init's slot (initSlots), each a multiple of the page
// size: its own stack, its command's process's stack (until the command
// executes), and the area where a run that fits is received. Whatever a
// run leaves unused costs no memory, only address space.
const (
	initStack    = 64 << 10
	commandStack = 256 << 10
	runArea      = 128 << 10
)

// initSlots keeps the memory of reaped inits, for the next ones: a run's
// init and its command's process share the spawner's address space, where
// mapping and unmapping memory for each run took the address space's lock
// while the run's own exec wanted it, faulted in fresh pages, and stopped
// the spawner's other CPUs to flush their TLBs (a run's biggest kernel
// cost on a machine where interrupts go through a hypervisor). A nil
// *initSlots keeps nothing: each slot is unmapped once its init is reaped.
type initSlots struct {
	free [][]byte
}

// maxFreeSlots is how many free slots initSlots keeps; more are unmapped.
const maxFreeSlots = 8

// get returns a free slot, or maps a new one: a guard page, the init's
// stack, a guard page, the command's stack, the run area. A stack that
// overruns faults on its guard (the process dies), rather than writing
// over this process's memory.
func (s *initSlots) get() ([]byte, error) {
	if s != nil && len(s.free) > 0 {
		slot := s.free[len(s.free)-1]
		s.free = s.free[:len(s.free)-1]
		return slot, nil
	}
	page := os.Getpagesize()
	slot, err := unix.Mmap(-1, 0, page+initStack+page+commandStack+runArea, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK)
	if err != nil {
		return nil, err
	}
	for _, guard := range []int{0, page + initStack} {
		if err := unix.Mprotect(slot[guard:guard+page], unix.PROT_NONE); err != nil {
			_ = unix.Munmap(slot)
			return nil, err
		}
	}
	return slot, nil
}

// put takes back the slot of a reaped init.
func (s *initSlots) put(slot []byte) {
	if s == nil || len(s.free) >= maxFreeSlots {
		_ = unix.Munmap(slot)
		return
	}
	s.free = append(s.free, slot)
}

// initMem is a run's init's memory: its dsh_init and its slot, which live
// until it is reaped (it may share this process's address space).
type initMem struct {
	init  *C.struct_dsh_init
	frees []unsafe.Pointer
	slots *initSlots
	slot  []byte
}

// release unmaps what the reaped init left mapped, clears what its run
// left in the run area, frees its memory, and gives its slot back. Safe to
// call twice.
func (m *initMem) release() {
	if m == nil {
		return
	}
	if m.init != nil {
		C.dsh_release_init(m.init)
		if m.slot != nil {
			used := min(int(m.init.run_area_used), runArea)
			clear(m.slot[len(m.slot)-runArea:][:used])
		}
	}
	for _, p := range m.frees {
		C.free(p)
	}
	m.frees, m.init = nil, nil
	if m.slot != nil {
		m.slots.put(m.slot)
		m.slot = nil
	}
}

// receivedInRunArea says whether the init's run was received in its slot's
// run area (it fit), rather than in mappings of its own.
func (m *initMem) receivedInRunArea() bool { return m.init.run_area_used > 0 }

// mapped lists the start of each mapping the init (or its command's
// process) still has in this process's address space: those it made for
// a run too large for its run area.
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
// for its run, in a slot from slots (nil: a slot of its own), and returns
// its pid and its memory, to release once it is reaped. Call it from the
// thread that outlives the init: the init dies with the thread that
// started it.
func startInit(w *initSpec, slots *initSlots) (int, *initMem, error) {
	m := &initMem{slots: slots}
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
	if n := len(w.guard); n > 0 {
		size := n * int(unsafe.Sizeof(unix.SockFilter{}))
		code := alloc(size)
		C.memcpy(code, unsafe.Pointer(&w.guard[0]), C.size_t(size))
		init.guard.len = C.ushort(n)
		init.guard.code = code
		if w.guardExempt != "" {
			exempt := alloc(len(w.guardExempt) + 1)
			C.memcpy(exempt, unsafe.Pointer(unsafe.StringData(w.guardExempt)), C.size_t(len(w.guardExempt)))
			init.guard_exempt = (*C.char)(exempt)
		}
	}
	init.cloneflags = C.ulong(w.cloneflags)
	if w.mountProc {
		init.mount_proc = 1
	}
	if w.devpts {
		init.devpts = 1
	}
	init.processes = C.long(w.processes)
	if w.background {
		init.background = 1
	}
	slot, err := slots.get()
	if err != nil {
		m.release()
		return 0, nil, err
	}
	m.slot = slot
	page := os.Getpagesize()
	stack := slot[page : page+initStack]
	command := slot[page+initStack+page:]
	init.command_stack = (*C.char)(unsafe.Pointer(&command[0]))
	init.command_stack_len = C.ulong(commandStack)
	init.run_area = (*C.char)(unsafe.Pointer(&command[commandStack]))
	init.run_area_len = C.ulong(runArea)
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
	runTerminal  = C.DSH_RUN_TERMINAL
	runChunk     = C.DSH_RUN_CHUNK
	runMaxSize   = C.DSH_RUN_MAX_SIZE
	runMaxGroups = C.DSH_RUN_MAX_CGROUPS
	runHeaderLen = C.sizeof_struct_dsh_run_header
)
