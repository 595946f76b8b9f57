package localexec

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// awaitExit returns once the child has exited (whether it exits later, or
// had already exited and waits to be reaped), and leaves its status for
// Wait; it never reaps the child itself.
func TestAwaitExitReturnsAtTheExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		before time.Duration // how long before the exit awaitExit is called
	}{
		{"exits later", "sleep 0.3; exit 7", 0},
		{"exited already", "exit 7", 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", "-c", tc.script)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(tc.before)
			began := time.Now()
			done := make(chan struct{})
			go func() { awaitExit(cmd.Process); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("awaitExit did not return within 10s of the exit")
			}
			if tc.before == 0 && time.Since(began) < 200*time.Millisecond {
				t.Errorf("awaitExit returned after %v, before the child exited", time.Since(began))
			}
			st, err := cmd.Process.Wait()
			if err != nil || st.ExitCode() != 7 {
				t.Errorf("Wait after awaitExit: %v, exit %d, want 7 (the status left for Wait)", err, st.ExitCode())
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid)); err == nil {
				t.Errorf("process %d still there after Wait", cmd.Process.Pid)
			}
		})
	}
}
