package procstat

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// A live process reads as such, with its parent, group and a start time
// that stays; an exited child not yet waited for is a zombie; a reaped one
// reads as gone.
func TestRead(t *testing.T) {
	self := os.Getpid()
	info, ok := Read(self)
	pgrp, _ := syscall.Getpgid(self)
	if !ok || info.Exited() || info.PPID != os.Getppid() || info.PGRP != pgrp || info.StartTime == "" || StartTime(self) != info.StartTime || !Alive(self) {
		t.Errorf("this process: %+v, %v; want ppid %d, group %d", info, ok, os.Getppid(), pgrp)
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for Alive(pid) {
	}
	if info, ok := Read(pid); !ok || info.State != "Z" {
		t.Errorf("an exited child not waited for: %+v, %v; want a zombie", info, ok)
	}
	_ = cmd.Wait()
	if _, ok := Read(pid); ok || Alive(pid) || StartTime(pid) != "" {
		t.Errorf("a reaped child still reads")
	}
}
