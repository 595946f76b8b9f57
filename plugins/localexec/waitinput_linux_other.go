//go:build linux && !amd64

package localexec

// callKind sorts the system calls that read, or wait to read, a
// descriptor: those every architecture has.
func callKind(nr int64) readCall { return commonCallKind(nr) }
