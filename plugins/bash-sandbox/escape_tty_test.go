//go:build linux

package bashsandbox_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The terminal attacks (issue 41): a sandboxed command must reach no
// terminal of the host's (the plugin's own controlling terminal, which its
// spawner and every run's init would inherit), nor another run's, nor its
// own after its run.

// cttyChildVar, set, makes this test binary the child of
// TestContainHostTerminal: a plugin whose controlling terminal is a pty the
// test holds, which runs the attacks and reports on its stdout.
const cttyChildVar = "DSH_TEST_CTTY_CHILD"

// hostTerminalAttacks reach for the controlling terminal of the process
// that runs the sandbox: by /dev/tty, opened by the command itself or,
// with O_CREAT (a redirect, <>), by its run's init (the guard makes such
// opens for the command, as the init: with the init's controlling
// terminal).
var hostTerminalAttacks = []string{
	`echo INJECTED-by-redirect >/dev/tty; echo "redirect: $?"`,
	`echo INJECTED-by-rdwr 1<>/dev/tty; echo "rdwr: $?"`,
	`exec 3<>/dev/tty && read -t 3 -u 3 line; echo "STOLE:[$line]"`,
	`exec 3</dev/tty && read -t 3 -u 3 line; echo "STOLE:[$line]"`,
	// A session leader without a terminal takes the first one it opens
	// without O_NOCTTY: then TIOCSTI would be its own terminal's.
	`perl -e 'open(my $t, "+<", "/dev/tty") or die "open: $!\n"; ioctl($t, 0x540E, 0) or print "TIOCSCTTY: $!\n"; for (split //, "echo INJECTED-by-TIOCSTI\n") { ioctl($t, 0x5412, $_) or die "TIOCSTI: $!\n" } print "injected\n"'`,
}

// TestContainHostTerminal runs the sandbox in a child whose controlling
// terminal is a pty this test holds (as a plugin started from a user's
// terminal has it), and checks that nothing the sandboxed commands do
// writes to it or reads what is typed there.
func TestContainHostTerminal(t *testing.T) {
	if os.Getenv(cttyChildVar) == "1" {
		hostTerminalChild(t)
		return
	}
	needTool(t, "perl")
	master, slave, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var (
		mu     sync.Mutex
		screen bytes.Buffer
	)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^TestContainHostTerminal$", "-test.v")
	cmd.Env = append(os.Environ(), cttyChildVar+"=1")
	cmd.Stdin = slave
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	// What the user types while the attacks run.
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				_, _ = master.Write([]byte("SECRET\n"))
			}
		}
	}()
	err = cmd.Wait()
	close(stop)
	t.Logf("child:\n%s", out.String())
	if err != nil {
		t.Fatalf("the child failed: %v", err)
	}
	mu.Lock()
	got := screen.String()
	mu.Unlock()
	if strings.Contains(got, "INJECTED") {
		t.Errorf("ESCAPE: a sandboxed command wrote to the plugin's terminal: %q", got)
	}
	if strings.Contains(out.String(), "STOLE:[SECRET]") {
		t.Errorf("ESCAPE: a sandboxed command read what was typed on the plugin's terminal")
	}
	if !strings.Contains(out.String(), "dsh-ctty-child-ran") {
		t.Fatalf("the child ran no attack")
	}
}

func hostTerminalChild(t *testing.T) {
	for _, mode := range confinedModes {
		b := containBox(t)
		for _, a := range hostTerminalAttacks {
			res := b.run(mode, a)
			t.Logf("dsh-ctty-child-ran %s: %.50q: stdout %q stderr %q", mode, a, res.Stdout.Text, res.Stderr.Text)
		}
	}
}
