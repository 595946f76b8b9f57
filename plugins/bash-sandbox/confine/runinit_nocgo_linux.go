//go:build linux && !cgo

package confine

import "errors"

// haveRunInit says whether this build has the per-run init (it needs cgo).
const haveRunInit = false

func startInit(*initSpec) (int, error) {
	return 0, errors.New("this build of the sandbox has no per-run init: build it with cgo")
}

// The run's wire format (runinit_linux.h), for a build that has no init to
// send it to.
const (
	runKind      = 0x52554e31
	runStdin     = 1
	runChunk     = 32 * 1024
	runMaxSize   = 16 << 20
	runMaxGroups = 4
	runHeaderLen = 32
)
