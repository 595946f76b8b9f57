//go:build linux && cgo

package confine

/*
#include <stdlib.h>
#include <string.h>
#include "runinit_linux.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// haveRunInit says whether this build has the per-run init (it needs cgo).
const haveRunInit = true

// startRun starts r's init (runinit_linux.c) in new namespaces, and returns
// its pid. Call it from the thread that outlives the init: the init dies
// with the thread that started it.
func startRun(r *runSpec) (int, error) {
	var frees []unsafe.Pointer
	defer func() {
		for _, p := range frees {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		frees = append(frees, unsafe.Pointer(p))
		return p
	}
	alloc := func(n int) unsafe.Pointer {
		if n == 0 {
			n = 1
		}
		p := C.calloc(C.size_t(n), 1)
		frees = append(frees, p)
		return p
	}
	strv := func(ss []string) **C.char {
		v := (*[1 << 20]*C.char)(alloc((len(ss) + 1) * int(unsafe.Sizeof((*C.char)(nil)))))[: len(ss)+1 : len(ss)+1]
		for i, s := range ss {
			v[i] = cstr(s)
		}
		return &v[0]
	}

	run := (*C.struct_dsh_run)(alloc(int(unsafe.Sizeof(C.struct_dsh_run{}))))
	run.path = cstr(r.path)
	run.argv = strv(r.argv)
	run.envp = strv(r.env)
	run.dir = cstr(r.dir)
	for i, fd := range r.stdio {
		run.stdio[i] = C.int(fd)
	}
	run.ctl = C.int(r.ctl)
	run.life = C.int(r.life)
	run.landlock = C.int(r.landlock)

	if n := len(r.filters); n > 0 {
		fs := (*[64]C.struct_dsh_filter)(alloc(n * int(unsafe.Sizeof(C.struct_dsh_filter{}))))[:n:n]
		for i, prog := range r.filters {
			size := len(prog) * int(unsafe.Sizeof(unix.SockFilter{}))
			code := alloc(size)
			C.memcpy(code, unsafe.Pointer(&prog[0]), C.size_t(size))
			fs[i].len = C.ushort(len(prog))
			fs[i].code = code
		}
		run.filters, run.nfilters = &fs[0], C.int(n)
	}
	if n := len(r.rlimits); n > 0 {
		ls := (*[64]C.struct_dsh_rlimit)(alloc(n * int(unsafe.Sizeof(C.struct_dsh_rlimit{}))))[:n:n]
		for i, l := range r.rlimits {
			ls[i].resource = C.int(l.resource)
			ls[i].lim.rlim_cur = C.rlim_t(l.cur)
			ls[i].lim.rlim_max = C.rlim_t(l.max)
		}
		run.rlimits, run.nrlimits = &ls[0], C.int(n)
	}
	if n := len(r.cgroups); n > 0 {
		cs := (*[64]C.int)(alloc(n * int(unsafe.Sizeof(C.int(0)))))[:n:n]
		for i, fd := range r.cgroups {
			cs[i] = C.int(fd)
		}
		run.cgroups, run.ncgroups = &cs[0], C.int(n)
	}
	run.cloneflags = C.ulong(r.cloneflags)

	if r.mountProc {
		run.mount_proc = 1
	}
	run.processes = C.long(r.processes)
	pid := int(C.dsh_start_run(run))
	if pid < 0 {
		return 0, syscall.Errno(-pid)
	}
	return pid, nil
}
