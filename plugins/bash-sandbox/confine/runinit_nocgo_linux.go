//go:build linux && !cgo

package confine

import "errors"

// haveRunInit says whether this build has the per-run init (it needs cgo).
const haveRunInit = false

// initMem is a run's init's memory; a build without cgo has none.
type initMem struct{}

func (*initMem) release() {}

// initSlots is the memory of reaped inits; a build without cgo has none.
type initSlots struct{}

func startInit(*initSpec, *initSlots) (int, *initMem, error) {
	return 0, nil, errors.New("this build of the sandbox has no per-run init: build it with cgo")
}

// The run's wire format (runinit_linux.h), for a build that has no init to
// send it to.
const (
	runKind      = 0x52554e31
	runStdin     = 1
	runTerminal  = 2
	runChunk     = 32 * 1024
	runMaxSize   = 4 << 20
	runMaxGroups = 4
	runHeaderLen = 32
)

// sharedVM: a build without cgo has no init to share anything.
const sharedVM = false
