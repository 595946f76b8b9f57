//go:build unix

package k8stestlock

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// tryLock says whether the lock's file can be locked as how at once, by
// another open file (as another test process would).
func tryLock(t *testing.T, how int) bool {
	t.Helper()
	f, err := os.OpenFile(lockPath(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), how|unix.LOCK_NB) == nil
}

// A shared holder keeps an exclusive one out, not another shared one; an
// exclusive holder keeps both out; each lets go when its test ends.
func TestSharedAndExclusive(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/kubeconfig")
	t.Run("shared", func(t *testing.T) {
		Shared(t)
		if tryLock(t, unix.LOCK_EX) || !tryLock(t, unix.LOCK_SH) {
			t.Error("under a shared holder: want exclusive refused, shared taken")
		}
	})
	t.Run("exclusive", func(t *testing.T) {
		Exclusive(t)
		if tryLock(t, unix.LOCK_EX) || tryLock(t, unix.LOCK_SH) {
			t.Error("under an exclusive holder: want both refused")
		}
	})
	if !tryLock(t, unix.LOCK_EX) {
		t.Error("after the holders' tests ended, the lock is still held")
	}
	_ = os.Remove(lockPath())
}
