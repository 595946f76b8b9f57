//go:build !linux

package localexec

import "os"

// awaitExit returns at once: Wait blocks (see wait_linux.go).
func awaitExit(*os.Process) {}
