package syscalldeny

import (
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// SockFilters are assembled instructions as seccomp(2) loads them.
func SockFilters(raw []bpf.RawInstruction) []unix.SockFilter {
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return prog
}
