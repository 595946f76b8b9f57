package host

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// execIDVar is the variable an executor tags its commands with (localexec's
// ExecIDVar): the host finds what a dead plugin left by it.
const execIDVar = "DSH_EXEC_ID"

// killTagged SIGKILLs every process whose environment carries a tag that
// starts with prefix, and the process group each leads; it reports how many
// it found. It is the host's last resort when a plugin died without
// terminating what it started.
func killTagged(prefix string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := []byte("\x00" + execIDVar + "=" + prefix + "-")
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
