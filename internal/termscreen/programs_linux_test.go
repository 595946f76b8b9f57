package termscreen_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dsh-host/dsh-host/internal/termkeys"
	"github.com/dsh-host/dsh-host/internal/termscreen"
)

// term is a real program on a real pty, its output fed into a Screen and
// the Screen's replies written back, as the terminal job will run.
type term struct {
	t       testing.TB
	cmd     *exec.Cmd
	pty     *os.File
	screen  *termscreen.Screen
	exited  chan struct{} // closed when cmd.Wait returned
	waitErr error
	copied  chan struct{} // closed when the pty's output stopped
	replied chan struct{}
}

// startTerm runs argv on a cols x rows pty in a session (and process
// group) of its own. At the test's end the program is gone: it was waited
// for, or its group killed and then waited for, and no process of its
// group is left.
func startTerm(t testing.TB, cols, rows int, argv ...string) *term {
	t.Helper()
	path, err := exec.LookPath(argv[0])
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed: under CI=true .ci/run installs it", argv[0])
		}
		t.Skipf("%s is not installed", argv[0])
	}
	home := t.TempDir()
	cmd := exec.Command(path, argv[1:]...)
	cmd.Dir = home
	cmd.Env = []string{"TERM=xterm-256color", "HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "LESSHISTFILE=-"}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	if err != nil {
		t.Fatal(err)
	}
	tm := &term{t: t, cmd: cmd, pty: f, screen: termscreen.New(cols, rows), exited: make(chan struct{}), copied: make(chan struct{}), replied: make(chan struct{})}
	go func() {
		tm.waitErr = cmd.Wait()
		close(tm.exited)
	}()
	go func() {
		defer close(tm.copied)
		_, _ = io.Copy(tm.screen, f) // ends with EIO when the last slave closes
	}()
	go func() {
		defer close(tm.replied)
		for b := range tm.screen.Replies() {
			_, _ = f.Write(b)
		}
	}()
	t.Cleanup(tm.stop)
	return tm
}

// stop kills what is left of the program's group, waits for it, and
// checks that its group is empty.
func (tm *term) stop() {
	pid := tm.cmd.Process.Pid
	select {
	case <-tm.exited:
	default:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-tm.exited
	}
	// The leader is reaped; no other process may be left in its group.
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		tm.t.Errorf("process group %d outlives its leader (kill 0: %v)", pid, err)
	}
	select {
	case <-tm.copied:
	case <-time.After(10 * time.Second):
		tm.t.Error("the pty's output did not end after the program did")
	}
	_ = tm.pty.Close()
	_ = tm.screen.Close()
	<-tm.replied
}

// send types keys, parsed by termkeys for the screen's cursor keys mode.
func (tm *term) send(keys string) {
	tm.t.Helper()
	b, err := termkeys.Parse(keys, termkeys.Options{AppCursorKeys: tm.screen.AppCursorKeys()})
	if err != nil {
		tm.t.Fatal(err)
	}
	if _, err := tm.pty.Write(b); err != nil {
		tm.t.Fatal(err)
	}
}

// waitScreen waits until the screen satisfies ok, and returns it.
func (tm *term) waitScreen(what string, ok func(termscreen.Snapshot) bool) termscreen.Snapshot {
	tm.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := tm.screen.Snapshot()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen did not show %s within 15s; it shows (cursor %d,%d, alt %v):\n%s", what, s.CursorRow, s.CursorCol, s.AltScreen, s.Text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitText waits until the screen shows want.
func (tm *term) waitText(want string) termscreen.Snapshot {
	tm.t.Helper()
	return tm.waitScreen(fmt.Sprintf("%q", want), func(s termscreen.Snapshot) bool { return strings.Contains(s.Text, want) })
}

// waitExit waits for the program to end, and checks that it ended well.
func (tm *term) waitExit() {
	tm.t.Helper()
	select {
	case <-tm.exited:
	case <-time.After(15 * time.Second):
		s := tm.screen.Snapshot()
		tm.t.Fatalf("the program did not end within 15s; the screen shows:\n%s", s.Text)
	}
	if tm.waitErr != nil {
		tm.t.Errorf("the program ended with %v", tm.waitErr)
	}
	// Everything it wrote is on the screen once its output ends.
	select {
	case <-tm.copied:
	case <-time.After(10 * time.Second):
		tm.t.Error("the pty's output did not end after the program did")
	}
}

func lines(s termscreen.Snapshot) []string {
	return strings.Split(s.Text, "\n")
}

func TestLess(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file.txt")
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&b, "line %d of the file\n", i)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, 80, 24, "less", file)
	// less shows 23 lines and its prompt on the last row.
	s := tm.waitScreen("the first page", func(s termscreen.Snapshot) bool {
		l := lines(s)
		return len(l) == 24 && l[0] == "line 1 of the file" && l[22] == "line 23 of the file"
	})
	if !s.AltScreen || !s.AppCursorKeys || s.CursorRow != 23 {
		t.Errorf("less: alt %v, app cursor keys %v, cursor row %d; want the alternate screen, application keys, the cursor on the prompt", s.AltScreen, s.AppCursorKeys, s.CursorRow)
	}
	tm.send("<PageDown>")
	tm.waitScreen("the second page", func(s termscreen.Snapshot) bool { return lines(s)[0] == "line 24 of the file" })
	tm.send(" ")
	tm.waitScreen("the third page", func(s termscreen.Snapshot) bool { return lines(s)[0] == "line 47 of the file" })
	// An arrow in application cursor keys mode (ESC O B): one line on.
	tm.send("<Down>")
	tm.waitScreen("one line on", func(s termscreen.Snapshot) bool { return lines(s)[0] == "line 48 of the file" })
	tm.send("<Up><Up>")
	tm.waitScreen("two lines back", func(s termscreen.Snapshot) bool { return lines(s)[0] == "line 46 of the file" })
	tm.send("G")
	tm.waitText("line 200 of the file")
	tm.send("q")
	tm.waitExit()
	if s := tm.screen.Snapshot(); s.AltScreen || strings.Contains(s.Text, "line 200") {
		t.Errorf("after less quit: alt %v, screen:\n%s", s.AltScreen, s.Text)
	}
}

func TestVim(t *testing.T) {
	editor := "vim"
	if _, err := exec.LookPath(editor); err != nil {
		editor = "vi"
	}
	tm := startTerm(t, 80, 24, editor, "-u", "NONE", "-i", "NONE", "-N", "notes.txt")
	tm.waitText(`"notes.txt"`)
	tm.send("ihello<Enter>world<Esc>")
	s := tm.waitScreen("the two lines typed", func(s termscreen.Snapshot) bool {
		l := lines(s)
		return len(l) > 2 && l[0] == "hello" && l[1] == "world" && s.CursorRow == 1
	})
	if !s.AltScreen {
		t.Errorf("%s is not on the alternate screen", editor)
	}
	// Back to the start of the line, and up: the arrows in whatever mode
	// vim asked for.
	tm.send("<Home><Up>A, said vi<Esc>")
	tm.waitScreen("the first line appended to", func(s termscreen.Snapshot) bool { return lines(s)[0] == "hello, said vi" })
	tm.send(":wq<Enter>")
	tm.waitExit()
	got, err := os.ReadFile(filepath.Join(tm.cmd.Dir, "notes.txt"))
	if err != nil || string(got) != "hello, said vi\nworld\n" {
		t.Errorf("%s wrote %q, %v", editor, got, err)
	}
}

func TestTop(t *testing.T) {
	tm := startTerm(t, 100, 30, "top", "-d", "0.5")
	s := tm.waitScreen("top's header", func(s termscreen.Snapshot) bool {
		l := lines(s)
		return strings.HasPrefix(l[0], "top - ") && strings.Contains(s.Text, "PID") && strings.Contains(s.Text, "COMMAND")
	})
	for _, l := range lines(s) {
		if len([]rune(l)) > 100 {
			t.Errorf("a line is wider than the screen: %q", l)
		}
	}
	tm.send("q")
	tm.waitExit()
}

// A prompt that reads without echo (a password), answered.
func TestReadPrompt(t *testing.T) {
	tm := startTerm(t, 80, 24, "bash", "--norc", "--noprofile", "-c",
		`read -r -s -p "Password: " pw; echo; echo "got ${#pw} characters: $pw"`)
	tm.waitText("Password:")
	tm.send("s3cret<Enter>")
	s := tm.waitText("got 6 characters: s3cret")
	if l := lines(s); l[0] != "Password:" {
		t.Errorf("the password was echoed: %q", l[0])
	}
	tm.waitExit()
}

// An interactive shell: a command, Ctrl-C of a running one, and Ctrl-D to
// leave.
func TestInteractiveShell(t *testing.T) {
	tm := startTerm(t, 80, 24, "bash", "--norc", "--noprofile", "-i")
	_, _ = tm.pty.Write([]byte("PS1='$ '\n"))
	tm.waitScreen("a prompt", func(s termscreen.Snapshot) bool { return strings.HasSuffix(s.Text, "$") && s.CursorCol == 2 })
	tm.send("echo $((6 * 7))<Enter>")
	tm.waitScreen("the answer", func(s termscreen.Snapshot) bool { return strings.Contains(s.Text, "\n42\n$") })
	tm.send("sleep 100; echo not interrupted<Enter>")
	tm.waitText("sleep 100")
	time.Sleep(100 * time.Millisecond)
	tm.send("<C-c>")
	tm.waitScreen("the prompt back", func(s termscreen.Snapshot) bool {
		return strings.HasSuffix(s.Text, "^C\n$") || strings.HasSuffix(s.Text, "\n$")
	})
	// Edit the line with the arrows before running it.
	tm.send("echo wrld<Left><Left><Left>o<End>!<Enter>")
	tm.waitText("\nworld!\n")
	tm.send("<C-d>")
	tm.waitExit()
	if s := tm.screen.Snapshot(); strings.Contains(s.Text, "\nnot interrupted\n") {
		t.Errorf("Ctrl-C did not interrupt:\n%s", s.Text)
	}
}

// A program that asks the terminal where the cursor is gets its answer
// (through Replies) rather than waiting for it.
func TestCursorQueryAnswered(t *testing.T) {
	tm := startTerm(t, 80, 24, "bash", "--norc", "--noprofile", "-c",
		`printf 'abc\e[6n'; IFS= read -r -s -d R -t 10 pos && printf '\nat %s\n' "${pos#*[}"`)
	tm.waitText("at 1;4")
	tm.waitExit()
}

// BenchmarkKeystrokeEcho is a keystroke's round trip through a terminal
// job: a key parsed by termkeys and written to bash's pty, until the
// screen shows its echo. tmux's send-keys and capture-pane do the same.
func BenchmarkKeystrokeEcho(b *testing.B) {
	tm := startTerm(b, 80, 24, "bash", "--norc", "--noprofile", "-i")
	_, _ = tm.pty.Write([]byte("PS1='$ '\n"))
	tm.waitScreen("a prompt", func(s termscreen.Snapshot) bool { return strings.HasSuffix(s.Text, "$") && s.CursorCol == 2 })
	typed := 0
	for b.Loop() {
		if typed == 70 {
			b.StopTimer()
			tm.send("<C-u>")
			tm.waitScreen("the line cleared", func(s termscreen.Snapshot) bool { return strings.HasSuffix(s.Text, "$") })
			typed = 0
			b.StartTimer()
		}
		tm.send("y")
		typed++
		want := "$ " + strings.Repeat("y", typed)
		for !strings.HasSuffix(tm.screen.Snapshot().Text, want) {
			time.Sleep(20 * time.Microsecond)
		}
	}
	b.StopTimer()
	tm.send("<C-u>exit<Enter>")
	tm.waitExit()
}
