//go:build linux

package bashsandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/dsh-host/dsh-host/pluginapi"
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
	// Every character device any process of the run has open (the
	// spawner's stderr, the plugin's, is the terminal).
	`for f in /proc/[0-9]*/fd/*; do [ -c "$f" ] && { echo "INJECTED-via-$f" 1<>"$f"; echo "via $f: $?"; }; done`,
	// A session leader without a terminal takes the first one it opens
	// without O_NOCTTY: then TIOCSTI would be its own terminal's.
	`perl -e 'open(my $t, "+<", "/dev/tty") or die "open: $!\n"; ioctl($t, 0x540E, 0) or print "TIOCSCTTY: $!\n"; for (split //, "echo INJECTED-by-TIOCSTI\n") { ioctl($t, 0x5412, $_) or die "TIOCSTI: $!\n" } print "injected\n"'`,
}

// TestContainHostTerminal runs the sandbox in a child whose controlling
// terminal, stdin and stderr are a pty this test holds (as a plugin
// started from a user's terminal has them), and checks that nothing the sandboxed commands do
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
	// Its stdin and stderr are the terminal, as a host's started there
	// (the spawner's stderr is the plugin's); its stdout is the report.
	cmd.Stdin, cmd.Stderr = slave, slave
	var out bytes.Buffer
	cmd.Stdout = &out
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

// termJob starts command in mode, in b's workspace, on a terminal; it is
// killed when the test ends.
func termJob(t *testing.T, b *box, mode pluginapi.SandboxMode, command string) pluginapi.ShellProcess {
	t.Helper()
	ctx := context.Background()
	spec, err := b.x.Resolve(ctx, pluginapi.ExecRequest{Command: command, Workdir: b.ws, SandboxMode: mode, Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.Kill(ctx)
		_, _ = p.Wait(ctx)
	})
	return p
}

// output reads p's output until it holds want (or, with want empty, until
// p is done), within d; it returns all it read.
func output(t *testing.T, p pluginapi.ShellProcess, want string, d time.Duration) string {
	t.Helper()
	var all strings.Builder
	if want == "" {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, _ = p.Wait(ctx)
		cancel()
		d = 0
	}
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		r, err := p.ReadOutput(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(r.Delta)
		if want != "" && strings.Contains(all.String(), want) || !time.Now().Before(deadline) {
			break
		}
	}
	if want == "" || strings.Contains(all.String(), want) {
		return all.String()
	}
	if want != "" {
		t.Fatalf("no %q within %s: %q", want, d, all.String())
	}
	return all.String()
}

// ioctlNr is ioctl's system call number here (perl's syscall takes it).
func ioctlNr() int {
	if unix.SYS_IOCTL == 29 {
		return 29
	}
	return unix.SYS_IOCTL
}

// tiocstiAttack pushes "echo INJECTED" into the command's own terminal's
// input with TIOCSTI, by the request as it is and with high bits set (the
// kernel takes an unsigned int), then reads a line there: the injected
// command, if it got in.
func tiocstiAttack() string {
	return fmt.Sprintf(`perl -e '
open(my $t, "+<", "/dev/tty") or die "open /dev/tty: $!\n";
for my $req (0x5412, 0xffffffff00005412) {
	for my $c (split //, "echo INJ" . "ECTED\n") {
		if (syscall(%d, fileno($t), $req, $c) != 0) { printf "TIOCSTI %%x: %%s\n", $req, $!; last }
	}
}
my $d = pack("i", 0); ioctl($t, %d, $d) or print "TIOCSETD: $!\n";'
read -t 1 line; echo "READ:[$line]"; echo tiocsti-done`, ioctlNr(), unix.TIOCSETD)
}

// TIOCSTI: a command on a terminal cannot push input into it, whatever
// the host's dev.tty.legacy_tiocsti says (it is 1 on many hosts, and
// then Linux lets a process push into its own controlling terminal: what
// the next reader there, a shell, would take as typed). Nor can it set a
// line discipline (TIOCSETD, even N_TTY's): the kernel's rarer ones are
// attack surface a pty would otherwise open to it.
func TestContainTerminalTIOCSTI(t *testing.T) {
	needTool(t, "perl")
	if v, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); err == nil {
		t.Logf("dev.tty.legacy_tiocsti = %s", strings.TrimSpace(string(v)))
	}
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		out := output(t, termJob(t, b, mode, tiocstiAttack()), "tiocsti-done", 20*time.Second)
		t.Logf("%q", out)
		if strings.Contains(out, "INJECTED") {
			t.Errorf("ESCAPE (TIOCSTI): a sandboxed command pushed input into its terminal: %q", out)
		}
		for _, req := range []string{"TIOCSTI 5412: Operation not permitted", "TIOCSTI ffffffff00005412: Operation not permitted", "TIOCSETD: Operation not permitted"} {
			if !strings.Contains(out, req) {
				t.Errorf("the attack did not say %q, so it proves nothing: %q", req, out)
			}
		}
	})
}

// stealAttack is what a run does to reach another run's terminal: every
// terminal it can name (its /dev/pts, the descriptors of every process it
// sees), opened for reading and writing: bytes written there, a read of
// what is typed there, TIOCSCTTY with force (stealing it as its own
// controlling terminal), and TIOCSTI.
const stealAttack = `echo "B-PTS $(stat -c %d /dev/pts/ptmx)"; ls /dev/pts
for f in /dev/pts/[0-9]* /proc/[0-9]*/fd/*; do
	[ -c "$f" ] || continue
	setsid perl -e '
		my $f = shift; open(my $t, "+<", $f) or do { print "open $f: $!\n"; exit };
		syswrite($t, "B-INJECTED into $f\n");
		ioctl($t, 0x540E, 1) or print "TIOCSCTTY $f: $!\n";
		my $c = "x"; ioctl($t, 0x5412, $c) or print "TIOCSTI $f: $!\n";
		my $rin = ""; vec($rin, fileno($t), 1) = 1;
		if (select(my $r = $rin, undef, undef, 3)) { sysread($t, my $got, 100); print "B-READ [$got] from $f\n" }
	' "$f" &
done
echo B-ARMED; wait; echo B-DONE`

// Another run's terminal is out of reach: each run's terminals are in a
// devpts instance of its own, which no other run's mount namespace has
// (with one devpts shared, as the host's is, a run would open another's
// slave by its number, write into its screen, read what is typed there).
func TestContainOtherRunsTerminal(t *testing.T) {
	needTool(t, "perl", "setsid", "stat")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		a := termJob(t, b, mode, `echo "A-READY $(stat -c %d /dev/pts/ptmx)"; read line; echo "A-GOT:[$line]"; sleep 60`)
		got := output(t, a, "A-READY", 20*time.Second)
		for _, viaTerminal := range []bool{true, false} {
			var bOut string
			if viaTerminal {
				bj := termJob(t, b, mode, stealAttack)
				bOut = output(t, bj, "B-ARMED", 20*time.Second)
				secret := marker() + "-secret"
				if err := pluginapi.WriteInput(context.Background(), a, []byte(secret+"\n"), false); err != nil {
					t.Fatal(err)
				}
				got += output(t, a, "A-GOT:", 20*time.Second)
				if !strings.Contains(got, "A-GOT:["+secret+"]") {
					t.Errorf("ESCAPE (input stolen): run A did not get what was typed on its terminal: %q", got)
				}
				if !strings.Contains(bOut, "B-DONE") {
					bOut += output(t, bj, "B-DONE", 20*time.Second)
				}
				if strings.Contains(bOut, secret) {
					t.Errorf("ESCAPE (another run's terminal read): run B read what was typed on run A's terminal: %q", bOut)
				}
			} else {
				res := b.run(mode, stealAttack)
				bOut = res.Stdout.Text + res.Stderr.Text
			}
			t.Logf("B (terminal %v): %q", viaTerminal, bOut)
			if !strings.Contains(bOut, "B-DONE") && !strings.Contains(bOut, "B-ARMED") {
				t.Fatalf("the attack did not run: %q", bOut)
			}
			if devA, devB := fieldAfter(got, "A-READY"), fieldAfter(bOut, "B-PTS"); devA == "" || devA == devB {
				t.Errorf("ESCAPE (shared devpts): runs A and B see the same devpts instance (%q, %q)", devA, devB)
			}
			if strings.Contains(bOut, "TIOCSCTTY") && !strings.Contains(bOut, "Operation not permitted") {
				t.Errorf("TIOCSCTTY with force did not fail as refused: %q", bOut)
			}
		}
		got += output(t, a, "", time.Second)
		if strings.Contains(got, "B-INJECTED") {
			t.Errorf("ESCAPE (another run's terminal written): run B wrote into run A's terminal: %q", got)
		}
	})
}

// fieldAfter is the word after the first key in text.
func fieldAfter(text, key string) string {
	_, rest, ok := strings.Cut(text, key+" ")
	if !ok {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// A terminal run's processes never hold its master (only the plugin
// does), and what a run leaves behind on its terminal cannot reach the
// next run's: the run's end kills it (its PID namespace's init), and its
// devpts instance goes with the run's mount namespace.
func TestContainTerminalMasterAndLeftovers(t *testing.T) {
	needTool(t, "perl", "setsid", "readlink")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		a := termJob(t, b, mode, `for f in /proc/[0-9]*/fd/*; do l=$(readlink "$f"); case $l in *ptmx*) echo "MASTER-HELD $f $l";; esac; done
setsid perl -e 'close STDIN; close STDOUT; close STDERR; open(my $t, "+<", "/dev/pts/0") or exit; sleep 2; syswrite($t, "LATE-INJECTED\n"); my $c = "x"; ioctl($t, 0x5412, $c); sleep 5' &
sleep 0.2; echo A-DONE`)
		out := output(t, a, "", 20*time.Second)
		t.Logf("A: %q", out)
		if !strings.Contains(out, "A-DONE") {
			t.Fatalf("the attack did not run: %q", out)
		}
		if strings.Contains(out, "MASTER-HELD") {
			t.Errorf("ESCAPE (master held): a process of the run holds its terminal's master: %q", out)
		}
		c := termJob(t, b, mode, `echo "C-PTS $(stat -c %d /dev/pts/ptmx)"; sleep 4; echo C-DONE`)
		out = output(t, c, "", 20*time.Second)
		t.Logf("C: %q", out)
		if !strings.Contains(out, "C-DONE") {
			t.Fatalf("the next run did not run: %q", out)
		}
		if strings.Contains(out, "LATE-INJECTED") {
			t.Errorf("ESCAPE (leftover): what a run left behind wrote into the next run's terminal: %q", out)
		}
	})
}

// /dev/tty is a terminal run's own terminal in every mode, however it is
// opened: in workspace-write an open with O_CREAT (a redirect) is made by
// the run's init for the command (the guard), which opens the command's
// controlling terminal, not its own (none; the plugin's, were the init in
// its session).
func TestTerminalDevTty(t *testing.T) {
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		out := output(t, termJob(t, b, mode, `echo by-redirect > /dev/tty; echo rc=$?; echo by-rdwr 1<>/dev/tty; echo rc=$?; tty`), "", 20*time.Second)
		for _, want := range []string{"by-redirect\r\nrc=0", "by-rdwr\r\nrc=0", "/dev/pts/0"} {
			if !strings.Contains(out, want) {
				t.Errorf("no %q in %q", want, out)
			}
		}
		res := b.run(mode, `echo by-redirect > /dev/tty; echo rc=$?`)
		if !strings.Contains(res.Stdout.Text, "rc=1") || !strings.Contains(res.Stderr.Text, "No such device or address") {
			t.Errorf("without a terminal /dev/tty must open nothing: %q %q", res.Stdout.Text, res.Stderr.Text)
		}
	})
}

// A run makes at most 64 terminals at once (its devpts instance's max):
// the kernel's pool for instances other than the host's is shared.
func TestTerminalsPerRunBounded(t *testing.T) {
	needTool(t, "perl")
	eachMode(t, func(t *testing.T, b *box, mode pluginapi.SandboxMode) {
		res := attack(t, b, mode, `perl -e 'my @t; while (open(my $f, "+<", "/dev/ptmx")) { push @t, $f; last if @t > 500 } print "made ", scalar(@t), ": $!\n"'`, "made ")
		if !strings.Contains(res.Stdout.Text, "made 64: No space left on device") {
			t.Errorf("a run made other than 64 terminals: %q %q", res.Stdout.Text, res.Stderr.Text)
		}
	})
}

// danger-full-access runs unconfined, on a terminal of the host's devpts
// as bash-local's are.
func TestTerminalInDangerFullAccess(t *testing.T) {
	b := containBox(t)
	out := output(t, termJob(t, b, pluginapi.SandboxDangerFullAccess, `tty; [ -t 0 ] && [ -t 1 ] && echo on-a-terminal`), "", 20*time.Second)
	if !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "on-a-terminal") {
		t.Errorf("a terminal job in danger-full-access: %q", out)
	}
}
