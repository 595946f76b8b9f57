//go:build unix

package k8stestlock

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wait bounds how long a test waits for the lock.
const wait = 10 * time.Minute

// Shared holds the cluster's lock shared until t ends: no test that
// restarts a part of the cluster runs meanwhile.
func Shared(t testing.TB) { hold(t, unix.LOCK_SH) }

// Exclusive holds the cluster's lock alone until t ends: no test that
// holds it shared runs meanwhile.
func Exclusive(t testing.TB) { hold(t, unix.LOCK_EX) }

// lockPath is the lock's file, beside the kubeconfig: the same for
// every test of the cluster, whatever TMPDIR each test process has.
func lockPath() string {
	kc := os.Getenv("KUBECONFIG")
	sum := sha256.Sum256([]byte(kc))
	return filepath.Join(filepath.Dir(kc), "dsh-k8s-test-"+hex.EncodeToString(sum[:6])+".lock")
}

func hold(t testing.TB, how int) {
	t.Helper()
	path := lockPath()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("the cluster's test lock: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	for deadline := time.Now().Add(wait); ; time.Sleep(100 * time.Millisecond) {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return
		}
		if err != unix.EWOULDBLOCK {
			t.Fatalf("the cluster's test lock %s: %v", path, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster's test lock %s: still held by another test after %s", path, wait)
		}
	}
}
