package ssh_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// banner is what the test user's login scripts print, to stdout and to
// stderr, as a real server's ~/.bashrc may: a line that could pass for an
// answer, and an unfinished last line.
const (
	bannerOut = `echo "Welcome to $(hostname)! Authorized use only."
echo x86_64
printf 'last login: never'
`
	bannerErr = `echo "motd: maintenance on Sunday" >&2
`
)

// bannerUser makes a user of the test's own whose ~/.bashrc (which bash
// reads for the commands sshd runs) and ~/.profile print a banner before
// anything else, and removes it, and checks that nothing of it runs, when
// the test ends. It needs root, as .ci/sshd does.
func bannerUser(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("making a user needs root (under CI=true the tests run as root)")
		}
		t.Skip("making a user needs root")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	user := "dsh-banner-" + hex.EncodeToString(b)
	if out, err := exec.Command("useradd", "--create-home", "--shell", "/bin/bash", "-p", "*", user).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", user, err, out)
	}
	t.Cleanup(func() {
		if left := userProcs(user, ""); len(left) > 0 {
			t.Errorf("processes of %s outlived the test: %v", user, left)
		}
		if out, err := exec.Command("userdel", "-r", user).CombinedOutput(); err != nil {
			t.Errorf("userdel -r %s: %v: %s", user, err, out)
		}
	})
	home := "/home/" + user
	for _, rc := range []string{".bashrc", ".profile"} {
		// The banner goes first, before the skeleton's check for an
		// interactive shell, as it does on the servers where it bites.
		skel, _ := os.ReadFile(filepath.Join(home, rc))
		script := "# banner\n" + bannerOut + bannerErr + string(skel)
		if err := os.WriteFile(filepath.Join(home, rc), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chown", user+":", filepath.Join(home, rc)).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v: %s", err, out)
		}
	}
	return user
}

// syncBuffer is a bytes.Buffer safe for the log's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A target whose login scripts print a banner works: the architecture
// check, the agent's SHA-256 check and the agent's stream each begin after
// a marker, and the banner is logged, never read as an answer. A second
// executor finds the agent uploaded by the first (its SHA-256 read right
// past the banner) and does not upload it again.
func TestALoginBannerIsNotTheAgentsAnswer(t *testing.T) {
	user := bannerUser(t)
	d := startSSHD(t, "AllowUsers="+user)
	log := &syncBuffer{}
	defer ssh.SetLogOutput(log)()
	settings := []byte(settingsJSON(t, target(t, map[string]any{"address": d.addr(), "knownHosts": d.knownHosts, "user": user})))
	ctx := t.Context()

	run := func(x pluginapi.ShellExecutor) {
		t.Helper()
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "uname -m >/dev/null; echo out; echo err >&2; exit 3"}, nil)
		if err != nil {
			t.Fatalf("a run on a target with a login banner: %v", err)
		}
		if res.Stdout.Text != "out\n" || res.Stderr.Text != "err\n" || res.ExitCode == nil || *res.ExitCode != 3 {
			t.Errorf("a run on a target with a login banner: stdout %q, stderr %q, exit %v; want out, err, 3", res.Stdout.Text, res.Stderr.Text, res.ExitCode)
		}
	}
	x := ssh.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	run(x)
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "echo background"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := p.Wait(wctx); err != nil {
		t.Fatalf("a background echo: %v", err)
	}
	if out, err := p.ReadOutput(ctx); err != nil || out.Delta != "background\n" {
		t.Errorf("a background process's output: %q, %v; want background", out.Delta, err)
	}

	agents, _ := filepath.Glob("/home/" + user + "/.cache/dsh-agent/*/dsh-agent")
	if len(agents) != 1 {
		t.Fatalf("agents uploaded: %v; want one", agents)
	}
	first, err := os.Stat(agents[0])
	if err != nil {
		t.Fatal(err)
	}
	y := ssh.New()
	defer y.Close(ctx)
	if err := y.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	run(y)
	if again, err := os.Stat(agents[0]); err != nil || !os.SameFile(first, again) {
		t.Errorf("the second executor uploaded the agent again (%v): its SHA-256 check read the banner", err)
	}

	logged := log.String()
	for _, want := range []string{"Welcome to", "last login: never", "the agent's stream", `the answer to "uname -m"`, "maintenance on Sunday"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log does not have %q:\n%s", want, logged)
		}
	}
}

// readPast finds its marker wherever reads cut it, keeps what came
// before (up to a bound), and gives back what came after it.
func TestReadPast(t *testing.T) {
	mark := []byte("dsh-begin-0123456789abcdef\n")
	long := strings.Repeat("banner ", 2000)
	for _, tt := range []struct {
		name, in, before, after string
		total                   int64
	}{
		{"no banner", string(mark) + "answer", "", "answer", 0},
		{"a banner", "hello\n" + string(mark) + "answer\n", "hello\n", "answer\n", 6},
		{"a banner without a newline", "hello" + string(mark), "hello", "", 5},
		{"a long banner", long + string(mark) + "x", long[:4096], "x", int64(len(long))},
	} {
		for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in)), iotest.HalfReader(strings.NewReader(tt.in))} {
			before, total, after, err := ssh.ReadPast(r, mark)
			rest, _ := io.ReadAll(r)
			if err != nil || string(before) != tt.before || total != tt.total || string(after)+string(rest) != tt.after {
				t.Errorf("%s: before %q (%d bytes), after %q, %v; want %q (%d), %q", tt.name, before, total, string(after)+string(rest), err, tt.before, tt.total, tt.after)
			}
		}
	}
	if _, total, _, err := ssh.ReadPast(strings.NewReader("bash: ./dsh-agent: No such file"), mark); err == nil || total != 31 {
		t.Errorf("no marker: %d bytes before, %v; want an error", total, err)
	}
}
