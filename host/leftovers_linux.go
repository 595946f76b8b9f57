package host

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/dsh-host/dsh-host/internal/procstat"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// killTagged SIGKILLs every process whose environment carries a tag that
// starts with prefix, and the process group each leads; it reports how many
// it found. It is the host's last resort when a plugin died without
// terminating what it started.
func killTagged(prefix string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := []byte("\x00" + pluginapi.ExecIDVar + "=" + prefix + "-")
	var killed []int
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
		// Found, and killed: by the group's kill (its parent may reap it
		// at once, and this kill then find nothing), or by this one.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		killed = append(killed, pid)
	}
	// Return once they are gone: whoever asked may report them dead.
	deadline := time.Now().Add(killTaggedWait)
	for _, pid := range killed {
		for procstat.Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return len(killed)
}

// killTaggedWait bounds how long killTagged waits for what it killed to die.
const killTaggedWait = 2 * time.Second
