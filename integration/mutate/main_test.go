//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A mutant's tests that kill their own process group (killGroup's guard
// negated kills group 0) kill only themselves, and count as a failure: the
// stand-in runs go test in a session of its own, and exits 1 when a signal
// ended it. Here the stand-in and a witness share a process group, as
// gremlins and the stand-in it starts do, and the "go" behind the stand-in
// kills its group: the witness must live, and the stand-in exit 1.
func TestStandInKeepsAGroupKillingTestToItself(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid here (util-linux):", err)
	}
	dir := t.TempDir()
	stand := filepath.Join(dir, "go")
	if err := os.WriteFile(stand, []byte(goStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	realGo := filepath.Join(dir, "real-go")
	if err := os.WriteFile(realGo, []byte("#!/bin/sh\nkill -KILL 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	witness := exec.Command("sleep", "60")
	witness.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := witness.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = witness.Process.Kill()
		_ = witness.Wait()
	}()
	cmd := exec.Command(stand, "test", "./...")
	cmd.Env = append(os.Environ(), "MUTATE_REAL_GO="+realGo, "MUTATE_TESTS=./x")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: witness.Process.Pid}
	err := cmd.Run()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Errorf("a go test killed by a signal: the stand-in ended with %v, want exit status 1", err)
	}
	// Give a kill that reached the group time to land.
	time.Sleep(100 * time.Millisecond)
	// Killed, it would linger as a zombie until waited for.
	if st, err := os.ReadFile("/proc/" + strconv.Itoa(witness.Process.Pid) + "/stat"); err != nil || zombie(st) {
		t.Fatalf("the go test behind the stand-in killed its caller's process group (%v)", err)
	}
}

// zombie says whether a /proc/PID/stat line is a zombie's.
func zombie(stat []byte) bool {
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && stat[i+2] == 'Z'
		}
	}
	return false
}
