//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	stand, realGo := standIn(t, "kill -KILL 0")
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

// standIn writes the stand-in and, behind it, a "go" that runs script; it
// returns both paths. Without setsid (util-linux) the test skips, and
// fails under CI=true.
func standIn(t *testing.T, script string) (stand, realGo string) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no setsid here (util-linux), which the stand-in needs:", err)
		}
		t.Skip("no setsid here (util-linux):", err)
	}
	dir := t.TempDir()
	stand = filepath.Join(dir, "go")
	if err := os.WriteFile(stand, []byte(goStandIn), 0o755); err != nil {
		t.Fatal(err)
	}
	realGo = filepath.Join(dir, "real-go")
	if err := os.WriteFile(realGo, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return stand, realGo
}

// An interrupted run leaves no go test behind: a TERM to the stand-in
// kills the session its go test runs in.
func TestStandInTakesItsGoTestWithItWhenStopped(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	stand, realGo := standIn(t, "echo $$ >"+pidFile+".new; mv "+pidFile+".new "+pidFile+"; exec sleep 60")
	cmd := exec.Command(stand, "test", "./...")
	cmd.Env = append(os.Environ(), "MUTATE_REAL_GO="+realGo, "MUTATE_TESTS=./x")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for end := time.Now().Add(10 * time.Second); pid == 0; time.Sleep(5 * time.Millisecond) {
		if data, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		}
		if pid == 0 && time.Now().After(end) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the go behind the stand-in never started")
		}
	}
	defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("the stand-in did not end on SIGTERM")
	}
	// The stand-in reaped its child, or left it to be reaped elsewhere.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || zombie(st) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the go test (pid %d) behind a stopped stand-in still runs", pid)
		}
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
