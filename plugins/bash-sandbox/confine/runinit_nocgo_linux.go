//go:build linux && !cgo

package confine

import "errors"

// haveRunInit says whether this build has the per-run init (it needs cgo).
const haveRunInit = false

func startRun(*runSpec) (int, error) {
	return 0, errors.New("this build of the sandbox has no per-run init: build it with cgo")
}
