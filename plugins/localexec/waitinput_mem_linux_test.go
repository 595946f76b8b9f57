package localexec

import (
	"os"
	"testing"
	"unsafe"
)

// Where process_vm_readv is refused (a container's seccomp profile),
// memory is read through /proc/PID/mem: the same bytes, and nothing for
// an address that is not mapped.
func TestReadProcMem(t *testing.T) {
	want := []byte("a select's read set, 32 bytes...")
	got := make([]byte, len(want))
	if !readProcMem(os.Getpid(), uint64(uintptr(unsafe.Pointer(&want[0]))), got) || string(got) != string(want) {
		t.Fatalf("read through /proc/PID/mem: %q; want %q", got, want)
	}
	if readProcMem(os.Getpid(), 8, got) {
		t.Errorf("an address that is not mapped read as if it were")
	}
	if readProcMem(os.Getpid(), 1<<63, got) {
		t.Errorf("an address past int64 read as if it were")
	}
}
