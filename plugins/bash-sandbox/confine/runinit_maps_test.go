//go:build linux && cgo

package confine

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapsChildVar marks TestInitUnmapsWhatItMaps's child, and carries its
// parent's mount namespace.
const mapsChildVar = "DSH_TEST_INIT_MAPS_PARENT_MNT_NS"

// A run's init shares its starter's address space (CLONE_VM), and so does
// its command's process until it executes. They use the slot their starter
// lends (stacks, run area), which the next init reuses: a run that fits
// maps nothing. What the command's process maps for a larger run is
// unmapped by the init once the command executed; an init killed before
// that leaves its mappings to whoever reaps it, and release unmaps them.
// Neither way does a run leave memory mapped in the spawner.
func TestInitUnmapsWhatItMaps(t *testing.T) {
	if !sharedVM {
		t.Skip("on this architecture a run's init is a forked copy: it maps nothing in its starter")
	}
	if parent := os.Getenv(mapsChildVar); parent != "" {
		initMapsChild(t, parent)
		return
	}
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("under CI=true this test must run: it needs root (new PID, IPC and mount namespaces, a /proc mount)")
		}
		t.Skip("a run's init needs root here: new PID, IPC and mount namespaces, a /proc mount")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestInitUnmapsWhatItMaps$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), mapsChildVar+"="+mountNamespace())
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the child: %v\n%s", err, out.Bytes())
	}
	if !strings.Contains(out.String(), "--- PASS: TestInitUnmapsWhatItMaps") {
		t.Fatalf("the child did not pass:\n%s", out.Bytes())
	}
}

// initMapsChild runs the test's inits, in mount and PID namespaces of its
// own (their /proc mounts stay out of the host's).
func initMapsChild(t *testing.T, parentNS string) {
	if self := mountNamespace(); self == "" || self == parentNS {
		t.Fatalf("the child shares its parent's mount namespace (%q)", self)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making the mounts private: %v", err)
	}
	runtime.LockOSThread() // inits die with the thread that started them
	defer runtime.UnlockOSThread()
	var life [2]int
	if err := unix.Pipe2(life[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(life[0])
	defer unix.Close(life[1])
	null, err := unix.Open(os.DevNull, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(null)
	// start makes a ready init in a slot from slots, and returns its
	// socket (closed when the test ends), its pid and its memory.
	start := func(t *testing.T, slots *initSlots) (int, int, *initMem) {
		t.Helper()
		ctl, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(ctl[0]) })
		spec := &initSpec{ctl: ctl[1], life: life[0], landlock: -1, cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWNS, mountProc: true}
		pid, mem, err := startInit(spec, slots)
		unix.Close(ctl[1])
		if err != nil {
			t.Fatal(err)
		}
		return ctl[0], pid, mem
	}
	reap := func(pid int) {
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				return
			}
		}
	}
	// runToEnd sends the init at ctl a run of argv and env, drives it to
	// its end and reaps the init; it returns how the run went.
	runToEnd := func(t *testing.T, ctl, pid int, argv, env []string) error {
		t.Helper()
		run, err := newRunRequest(argv, env, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		run.stdin, run.stdout, run.stderr = null, null, null
		if err := sendRun(ctl, run); err != nil {
			t.Fatal(err)
		}
		err = driveInit(ctl)
		reap(pid)
		return err
	}
	// sendRunHeader sends the header of a run of two arguments and size
	// bytes, with stdout and stderr, as sendRun does before its chunks.
	sendRunHeader := func(t *testing.T, ctl, size int) {
		t.Helper()
		head := make([]byte, runHeaderLen)
		e := binary.NativeEndian
		e.PutUint32(head[0:], runKind)
		e.PutUint32(head[8:], 2) // argc
		e.PutUint64(head[24:], uint64(size))
		if err := sendPacket(ctl, head, unix.UnixRights(null, null)); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("ran", func(t *testing.T) {
		ctl, pid, mem := start(t, nil)
		defer mem.release()
		// A run of several chunks, too large for the run area: it is
		// received in mappings of its own, which the init unmaps once its
		// command executed. (No one string may pass the kernel's 128 KiB.)
		big := strings.Repeat("x", runArea/2)
		if err := runToEnd(t, ctl, pid, []string{"/bin/true", big, big, big}, []string{"A=b"}); err != nil {
			t.Fatal(err)
		}
		if mem.receivedInRunArea() {
			t.Fatal("the run was received in the run area: nothing here tests the init's own mappings")
		}
		if left := mem.mapped(); len(left) != 0 {
			t.Errorf("the init left %d mappings in its starter after its command ran: %#x", len(left), left)
		}
	})

	// A run whose strings come in a message longer than a chunk is refused
	// (the init once read the chunk's first 32 KiB, and waited for ever
	// for the rest), and leaves nothing mapped. It is larger than the run
	// area, so that it is received in mappings of its own.
	t.Run("oversized-chunk", func(t *testing.T) {
		ctl, pid, mem := start(t, nil)
		defer mem.release()
		run, err := newRunRequest([]string{"/bin/true", strings.Repeat("x", runArea)}, nil, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		sendRunHeader(t, ctl, len(run.body))
		if err := sendPacket(ctl, run.body, nil); err != nil { // one message, not chunks
			t.Fatal(err)
		}
		m, fd, err := readInitMsg(ctl, stepDeadline)
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil {
			_ = unix.Kill(pid, unix.SIGKILL) // still waiting for the rest
		}
		reap(pid)
		if err != nil || m.kind != msgFailed || unix.Errno(m.a) != unix.EMSGSIZE {
			t.Errorf("the init answered %+v (%v), want a failure with EMSGSIZE", m, err)
		}
		if mem.receivedInRunArea() {
			t.Error("the run was taken for one that fits the run area: nothing here tests the init's own mappings")
		}
		if left := mem.mapped(); len(left) != 0 {
			t.Errorf("the refused run left %d mappings: %#x", len(left), left)
		}
	})

	// An init killed while its command's process receives a run too large
	// for the run area leaves that run's mappings; release unmaps them.
	t.Run("killed-receiving", func(t *testing.T) {
		ctl, pid, mem := start(t, nil)
		run, err := newRunRequest([]string{"/bin/true", strings.Repeat("x", 2*runArea)}, nil, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		sendRunHeader(t, ctl, len(run.body))
		if err := sendPacket(ctl, run.body[:runChunk], nil); err != nil { // the rest never comes
			t.Fatal(err)
		}
		for began := time.Now(); len(mem.mapped()) < 2; time.Sleep(time.Millisecond) {
			if time.Since(began) > 10*time.Second {
				t.Fatalf("the command's process never mapped the large run (%d mappings)", len(mem.mapped()))
			}
		}
		if err := unix.Kill(pid, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
		reap(pid)
		left := mem.mapped()
		if len(left) == 0 {
			t.Fatal("the killed init left nothing mapped: nothing here tests release")
		}
		mem.release()
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		for _, start := range left {
			if strings.Contains(string(maps), fmt.Sprintf("%x-", start)) {
				t.Errorf("the killed init's mapping at %#x is still mapped after release", start)
			}
		}
	})

	// Inits made one after another reuse one slot: a run that fits is
	// received in its run area, which is cleared once the init is reaped
	// (no run's arguments or environment stay in the spawner's memory), and
	// what an earlier, larger run left there does not reach a later one.
	t.Run("reused", func(t *testing.T) {
		slots := &initSlots{}
		defer func() {
			for _, slot := range slots.free {
				_ = unix.Munmap(slot)
			}
		}()
		runs := []struct {
			argv, env []string
		}{
			{[]string{"/bin/sh", "-c", `[ "$#" -eq 3 ] && [ "$B" = leftover ]`, "sh", "one", "two", "three"}, []string{"A=" + strings.Repeat("a", 30_000), "B=leftover"}},
			{[]string{"/bin/sh", "-c", `[ "$#" -eq 0 ] && [ -z "${B+set}" ] && [ "$A" = b ]`}, []string{"A=b"}},
		}
		var first uintptr
		for i, r := range runs {
			ctl, pid, mem := start(t, slots)
			at := uintptr(unsafe.Pointer(&mem.slot[0]))
			if i == 0 {
				first = at
			} else if at != first {
				t.Errorf("init %d was made in a new slot at %#x, not in the free one at %#x", i, at, first)
			}
			err := runToEnd(t, ctl, pid, r.argv, r.env)
			area := mem.slot[len(mem.slot)-runArea:]
			inArea, received := mem.receivedInRunArea(), bytes.Contains(area, []byte(r.argv[2]))
			mem.release() // the slot stays mapped: it is kept for the next init
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			if !inArea || !received {
				t.Errorf("run %d, which fits the run area, was not received there", i)
			}
			if j := slices.IndexFunc(area, func(b byte) bool { return b != 0 }); j >= 0 {
				t.Errorf("run %d left bytes in the run area once released (at %d: %q)", i, j, area[j:min(j+32, len(area))])
			}
		}
		if len(slots.free) != 1 {
			t.Errorf("%d free slots after two inits one after another, want 1", len(slots.free))
		}
	})
}
