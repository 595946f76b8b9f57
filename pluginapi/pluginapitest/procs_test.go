package pluginapitest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// failures is a testing.TB that records its Fatalf instead of failing the
// test, and ends the goroutine as t.Fatalf does.
type failures struct {
	testing.TB
	msgs []string
}

func (f *failures) Helper() {}

func (f *failures) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

// check runs a check with f as its TB, in a goroutine of its own (Fatalf
// ends it), and returns what it reported.
func (f *failures) check(run func(t testing.TB)) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(f)
	}()
	<-done
	return f.msgs
}

// Where /proc cannot be read, the checks that processes are gone fail
// saying so: they do not pass without having looked.
func TestGoneChecksFailWhereTheyCannotLook(t *testing.T) {
	saved := procDir
	t.Cleanup(func() { procDir = saved })
	procDir = filepath.Join(t.TempDir(), "no-proc")
	// This test's own process: alive, and so never gone.
	self := procRef{pid: os.Getpid()}
	inNS := procRef{pid: 1, ns: "pid:[4026531836]"}
	for name, run := range map[string]func(t testing.TB){
		"group":              func(t testing.TB) { requireGroupGone(t, hostLook{}, self) },
		"group in namespace": func(t testing.TB) { requireGroupGone(t, hostLook{}, inNS) },
		"pids":               func(t testing.TB) { requirePIDsGone(t, hostLook{}, self) },
		"pids in namespace":  func(t testing.TB) { requirePIDsGone(t, hostLook{}, self, inNS) },
	} {
		f := &failures{TB: t}
		msgs := f.check(run)
		if len(msgs) != 1 || !strings.Contains(msgs[0], "cannot look") || !strings.Contains(msgs[0], procDir) {
			t.Errorf("%s: with no %s the check reported %q; want one failure saying it cannot look there", name, procDir, msgs)
		}
	}
}

// Where /proc can be read, a process that is gone passes the checks: the
// failure above is for not looking, not for every process.
func TestGoneChecksPassForAProcessThatIsGone(t *testing.T) {
	// A process ID that is no process: above the kernel's highest.
	gone := procRef{pid: 1 << 23}
	for name, run := range map[string]func(t testing.TB){
		"group": func(t testing.TB) { requireGroupGone(t, hostLook{}, gone) },
		"pids":  func(t testing.TB) { requirePIDsGone(t, hostLook{}, gone) },
	} {
		f := &failures{TB: t}
		if msgs := f.check(run); len(msgs) != 0 {
			t.Errorf("%s: the check failed for a process that does not exist: %q", name, msgs)
		}
	}
}
