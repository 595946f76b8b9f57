package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 12, items 5 and 11, through the real binary: a confined command
// cannot stop the sandbox's spawner, a spawner stopped from outside is
// killed and replaced, and honest calls do not fail under load. Each
// scenario's dsh-host mcp has a workspace, a temporary directory of its own
// (empty again once it ended) and a tag; when it ends nothing it started
// may be alive (scenario checks /proc: the spawners and their runs' inits
// run dsh-host's binary) and no control group of its plugin may be left.

// spawnerMarker is in the command line of bash-sandbox's spawners, and of
// their runs' inits (forked copies of them).
const spawnerMarker = "__dsh-sandbox-spawner"

// The bounds of the scenarios.
const (
	// answerBound: a call after a wedge attempt is answered within it.
	answerBound = 20 * time.Second
	// endBound: dsh-host mcp ends within it of stdin's EOF or SIGTERM
	// (its teardown's own bound is 15 s: closeTimeout).
	endBound = 20 * time.Second
)

// stopEverything tries to stop every thread the command can see but its
// own shell's: from outside its PID namespace that would be the spawner
// (reached through /proc/PID/task, as in the issue), the plugin, the host.
const stopEverything = `for p in /proc/[0-9]*; do for t in $p/task/*; do [ "${t##*/}" = "$$" ] || kill -STOP ${t##*/}; done; done 2>/dev/null; echo tried`

// wedgeServer is a dsh-host mcp over bash-sandbox on pipes of the test's
// own: the test closes its stdin, signals it, and sees how it ends.
type wedgeServer struct {
	cmd    *exec.Cmd
	stdin  *os.File // the write end of its stdin
	cs     *mcp.ClientSession
	tmp    string // its $TMPDIR
	stderr serverLog
	exited chan struct{} // closed once it was waited for
	state  *os.ProcessState
	// plugins are the plugin processes seen under it, for their groups.
	plugins []wedgeProc
}

// serverLog is the server's stderr: a file, so that the server's exit is
// seen at once (no copier waits for whoever else holds a pipe).
type serverLog string

func (l serverLog) String() string {
	b, _ := os.ReadFile(string(l))
	return string(b)
}

// wedgeNobody is the uid and gid of nobody.
const wedgeNobody = 65534

// wedgeUser is who runs dsh-host mcp: the test's user, or nobody.
type wedgeUser struct {
	name   string
	nobody bool
}

var wedgeUsers = []wedgeUser{{name: "own-user"}, {name: "nobody", nobody: true}}

// startWedgeServer starts `dsh-host mcp --executor bash-sandbox` as user,
// with a settings file of the YAML settings, tagged tag, in a workspace of
// its own, and connects the SDK's client. As nobody (the test being root)
// it runs a copy of dsh-host that nobody can reach, in a workspace of
// nobody's; the copy is not in bins.dir, so a cleanup looks for processes
// running it besides scenario's.
func startWedgeServer(t *testing.T, tag string, user wedgeUser, settings string) *wedgeServer {
	t.Helper()
	setpriv, _ := exec.LookPath("setpriv")
	if user.nobody && (os.Getuid() != 0 || setpriv == "") {
		skipOrFail(t, "needs root, to become nobody with setpriv")
	}
	// A short $TMPDIR: the plugin's socket goes beneath it, and a unix
	// socket's path has at most 107 bytes (a t.TempDir() is too long).
	tmp, err := os.MkdirTemp("", "wedge-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	dir := t.TempDir() // the settings file, the workspace; nobody's copy of dsh-host
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "settings.yaml")
	if err := os.WriteFile(file, []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{bins.host, "mcp", "--executor", "bash-sandbox", "--settings", file}
	if user.nobody {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, d := range []string{ws, tmp} {
			if err := os.Chown(d, wedgeNobody, wedgeNobody); err != nil {
				t.Fatal(err)
			}
		}
		argv[0] = filepath.Join(dir, "dsh-host")
		data, err := os.ReadFile(bins.host)
		if err == nil {
			err = os.WriteFile(argv[0], data, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { assertNoneRuns(t, argv[0]) })
		argv = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	s := &wedgeServer{tmp: tmp, exited: make(chan struct{})}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = ws
	s.cmd.Env = append(os.Environ(), tagVar+"="+tag, "TMPDIR="+s.tmp)
	logFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s.stderr = serverLog(logFile.Name())
	s.cmd.Stderr = logFile
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stdin, s.cmd.Stdout = inR, outW
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	s.stdin = inW
	go func() {
		_ = s.cmd.Wait()
		s.state = s.cmd.ProcessState
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(endBound):
			t.Errorf("dsh-host mcp (%d) did not end within %s of the test's end; killed\nstderr:\n%s", s.cmd.Process.Pid, endBound, s.stderr)
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if s.cs != nil {
			_ = s.cs.Close()
		}
		outR.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-wedge-test", Version: "0"}, nil)
	s.cs, err = client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connecting to dsh-host mcp: %v\nstderr:\n%s", err, s.stderr)
	}
	return s
}

// assertNoneRuns fails t if a process running bin (a spawner, a run's init,
// the plugin, dsh-host itself) is alive after up to survivorWait, and
// SIGKILLs it.
func assertNoneRuns(t *testing.T, bin string) {
	t.Helper()
	running := func() []int {
		entries, _ := os.ReadDir("/proc")
		var pids []int
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); exe == bin || exe == bin+" (deleted)" {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(survivorWait)
	for len(running()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range running() {
		t.Errorf("process %d, running %s, survived the scenario: %q", pid, bin, argvOf(pid))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// bash calls the bash tool with args within bound, and says how it went:
// its text, whether it is an error result, an error when the call itself
// failed (the bound passed among others), and how long it took.
func (s *wedgeServer) bash(args map[string]any, bound time.Duration) (string, bool, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	began := time.Now()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: args})
	took := time.Since(began)
	if err != nil {
		return "", false, took, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError, took, nil
}

// mustBash is bash, failing t unless the call returns within bound a
// result that is not an error.
func (s *wedgeServer) mustBash(t *testing.T, command string, bound time.Duration) string {
	t.Helper()
	text, isErr, took, err := s.bash(map[string]any{"command": command}, bound)
	if err != nil || isErr {
		t.Fatalf("bash %q: %q (error result %v) after %s: %v\nstderr:\n%s", command, text, isErr, took.Round(time.Millisecond), err, s.stderr)
	}
	return text
}

// waitEnd waits up to endBound for the server to exit, and fails t unless
// it exited by itself with status 0.
func (s *wedgeServer) waitEnd(t *testing.T, why string) {
	t.Helper()
	began := time.Now()
	select {
	case <-s.exited:
	case <-time.After(endBound):
		t.Errorf("dsh-host mcp did not end within %s of %s\nstderr:\n%s", endBound, why, s.stderr)
		_ = s.cmd.Process.Kill()
		<-s.exited
		return
	}
	t.Logf("dsh-host mcp ended %s after %s: %s", why, time.Since(began).Round(time.Millisecond), s.state)
	if !s.state.Exited() || s.state.ExitCode() != 0 {
		t.Errorf("dsh-host mcp ended %s with %s, want status 0\nstderr:\n%s", why, s.state, s.stderr)
	}
}

// sawPlugins records the plugin processes under the server now.
func (s *wedgeServer) sawPlugins() {
	for _, p := range wedgeDescendants(s.cmd.Process.Pid) {
		if argv := argvOf(p.pid); len(argv) >= 3 && argv[1] == "plugin" && argv[2] == "serve" && !slices.Contains(s.plugins, p) {
			s.plugins = append(s.plugins, p)
		}
	}
}

// spawners are the sandbox's spawners under the server now: the processes
// with the marker whose parent has none (a run's init is the child of its
// spawner).
// warmSpawner runs a first command, so that the server's plugin and its
// one spawner exist, and returns that spawner.
func (s *wedgeServer) warmSpawner(t *testing.T) wedgeProc {
	t.Helper()
	s.mustBash(t, "echo warm", answerBound)
	s.sawPlugins()
	spawners := s.spawners()
	if len(spawners) != 1 {
		t.Fatalf("spawners under dsh-host mcp: %+v, want one", spawners)
	}
	return spawners[0]
}

func (s *wedgeServer) spawners() []wedgeProc {
	var out []wedgeProc
	for _, p := range wedgeDescendants(s.cmd.Process.Pid) {
		if p.state != "Z" && strings.Contains(strings.Join(argvOf(p.pid), " "), spawnerMarker) &&
			!strings.Contains(strings.Join(argvOf(p.ppid), " "), spawnerMarker) {
			out = append(out, p)
		}
	}
	return out
}

// assertClean checks, once the server ended, that it left nothing in its
// temporary directory, and no control group of its plugins after up to
// survivorWait (the time scenario gives processes to go).
func (s *wedgeServer) assertClean(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(s.tmp)
	for _, e := range entries {
		t.Errorf("left in dsh-host's temporary directory: %s", filepath.Join(s.tmp, e.Name()))
	}
	if len(s.plugins) == 0 {
		t.Error("no plugin of dsh-host mcp was seen: its control groups cannot be checked")
	}
	var pids []int
	for _, p := range s.plugins {
		pids = append(pids, p.pid)
		if p.alive() {
			t.Logf("the plugin %d still runs after dsh-host mcp ended", p.pid)
		}
	}
	began := time.Now()
	left := wedgeCgroupDirs(pids)
	for ; len(left) > 0 && time.Since(began) < survivorWait; left = wedgeCgroupDirs(pids) {
		time.Sleep(20 * time.Millisecond)
	}
	for _, d := range left {
		t.Errorf("control group directory left: %s", d)
	}
	if took := time.Since(began); len(left) == 0 && took > 20*time.Millisecond {
		t.Logf("the plugins' control group directories went %s after dsh-host mcp ended", took.Round(time.Millisecond))
	}
}

// wedgeProc is a process as /proc/PID/stat shows it.
type wedgeProc struct {
	pid, ppid int
	state     string
	start     string // start time: tells it from a later process with its number
}

func wedgeStat(pid int) (wedgeProc, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 {
		return wedgeProc{}, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return wedgeProc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	return wedgeProc{pid: pid, ppid: ppid, state: f[0], start: f[19]}, true
}

// wedgeDescendants are root's descendants now.
func wedgeDescendants(root int) []wedgeProc {
	entries, _ := os.ReadDir("/proc")
	all := map[int]wedgeProc{}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := wedgeStat(pid); ok {
				all[pid] = p
			}
		}
	}
	var out []wedgeProc
	for _, p := range all {
		for anc, n := p.ppid, 0; anc > 1 && n < 64; anc, n = all[anc].ppid, n+1 {
			if anc == root {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// alive says whether p still runs: the same process (same start), not a
// zombie.
func (p wedgeProc) alive() bool {
	now, ok := wedgeStat(p.pid)
	return ok && now.start == p.start && now.state != "Z"
}

// wedgeCgroupDirs are the control group directories bash-sandbox's plugins
// made (dsh-PLUGIN-N) still in the pids and memory hierarchies.
func wedgeCgroupDirs(plugins []int) []string {
	var out []string
	for _, root := range []string{"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"} {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			for _, p := range plugins {
				if strings.HasPrefix(d.Name(), "dsh-"+strconv.Itoa(p)+"-") {
					out = append(out, path)
					return fs.SkipDir
				}
			}
			return nil
		})
	}
	return out
}

// The two confined modes the scenarios run in, by their settings.
var wedgeModes = []struct{ name, settings string }{
	{"workspace-write", "sandbox:\n  defaultMode: workspace-write\n"},
	{"read-only", "sandbox:\n  defaultMode: read-only\n"},
}

// Item 5: a command that stops every thread it can see reaches nothing
// outside its PID namespace: the call returns, the spawner is the same one
// and is not stopped, the next call is answered, and dsh-host mcp ends on
// stdin's EOF, or on SIGTERM, leaving nothing.
func TestSandboxCommandCannotStopTheSpawner(t *testing.T) {
	for _, user := range wedgeUsers {
		for _, mode := range wedgeModes {
			for _, end := range []string{"stdin EOF", "SIGTERM"} {
				t.Run(user.name+"/"+mode.name+"/"+strings.ReplaceAll(end, " ", "-"), func(t *testing.T) {
					tag := scenario(t)
					s := startWedgeServer(t, tag, user, mode.settings)
					before := []wedgeProc{s.warmSpawner(t)}

					text, isErr, took, err := s.bash(map[string]any{"command": stopEverything}, answerBound)
					if err != nil || isErr || !strings.HasSuffix(strings.TrimSpace(text), "tried") {
						t.Errorf("the command that stops what it sees: %q (error result %v) after %s: %v", text, isErr, took.Round(time.Millisecond), err)
					}
					if text := s.mustBash(t, "echo alive", answerBound); text != "alive" {
						t.Errorf("echo alive after the attempt: %q", text)
					}
					after := s.spawners()
					if len(after) != 1 || after[0].pid != before[0].pid || after[0].start != before[0].start {
						t.Errorf("spawners %+v before the attempt, %+v after: a command reached the spawner", before, after)
					}
					for _, p := range append(wedgeDescendants(s.cmd.Process.Pid), wedgeProc{pid: s.cmd.Process.Pid}) {
						if now, ok := wedgeStat(p.pid); ok && (now.state == "T" || now.state == "t") {
							t.Errorf("process %d %q is stopped: a command reached it", p.pid, argvOf(p.pid))
						}
					}
					s.sawPlugins()

					switch end {
					case "stdin EOF":
						s.stdin.Close()
					case "SIGTERM":
						if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
							t.Fatal(err)
						}
					}
					s.waitEnd(t, "on "+end)
					s.assertClean(t)
				})
			}
		}
	}
}

// Item 5, from outside: the spawner SIGSTOPped while a command runs under
// it. The call settles within 20 s, the stopped spawner is killed, and the
// next call runs under a new one. The command is a sleep whose 1 s timeout
// ends it (the timeout is the result's cause), or one that ends by itself
// while the spawner is stopped: its run's init reports its end to the
// plugin itself, so the result is the command's own.
func TestSandboxStoppedSpawnerIsReplaced(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		// finishes says the command ends by itself, and its own output
		// must come back.
		finishes bool
	}{
		{"timeout", map[string]any{"command": "sleep 30", "timeout": 1000}, false},
		{"ends-by-itself", map[string]any{"command": "sleep 2; echo finished"}, true},
	}
	for _, user := range wedgeUsers {
		for _, mode := range wedgeModes {
			for _, c := range cases {
				t.Run(user.name+"/"+mode.name+"/"+c.name, func(t *testing.T) {
					tag := scenario(t)
					s := startWedgeServer(t, tag, user, mode.settings)
					old := s.warmSpawner(t)

					type answer struct {
						text  string
						isErr bool
						took  time.Duration
						err   error
					}
					settled := make(chan answer, 1)
					go func() {
						text, isErr, took, err := s.bash(c.args, answerBound)
						settled <- answer{text, isErr, took, err}
					}()
					// Stop the spawner once the sleep runs under it.
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
						if slices.ContainsFunc(ours(tag), func(pid int) bool { a := argvOf(pid); return len(a) > 0 && a[0] == "sleep" }) {
							break
						}
						if time.Now().After(deadline) {
							t.Fatal("the sleep was not seen running")
						}
					}
					if err := syscall.Kill(old.pid, syscall.SIGSTOP); err != nil {
						t.Fatal(err)
					}
					// Should the product not kill it, the cleanup must not leave
					// it stopped (a stopped process ignores SIGTERM until
					// continued).
					t.Cleanup(func() {
						if old.alive() {
							_ = syscall.Kill(old.pid, syscall.SIGKILL)
						}
					})

					a := <-settled
					t.Logf("the call under the stopped spawner settled after %s: %q (error result %v) %v", a.took.Round(time.Millisecond), a.text, a.isErr, a.err)
					switch {
					case a.err != nil:
						t.Errorf("the call under the stopped spawner did not settle within %s: %v\nstderr:\n%s", answerBound, a.err, s.stderr)
					case strings.Contains(a.text, "not run"):
						// The sleep was seen running before the spawner was
						// stopped: a run said not to have run may be run again.
						t.Errorf("the command ran (its sleep was seen in /proc before the spawner was stopped), yet the result says it did not: %q", a.text)
					case c.finishes && (a.text != "finished" || a.isErr):
						t.Errorf("the run that ended by itself under a stopped spawner reads %q (error result %v), want its own output", a.text, a.isErr)
					}
					if text := s.mustBash(t, "echo next", answerBound); text != "next" {
						t.Errorf("the call after: %q", text)
					}
					s.sawPlugins()
					now := s.spawners()
					if len(now) != 1 || now[0].pid == old.pid {
						t.Errorf("spawners after: %+v, want one, not the stopped %d", now, old.pid)
					}
					for deadline := time.Now().Add(5 * time.Second); old.alive(); time.Sleep(20 * time.Millisecond) {
						if time.Now().After(deadline) {
							st, _ := wedgeStat(old.pid)
							t.Errorf("the stopped spawner %d is still there (state %s) after the next call", old.pid, st.state)
							break
						}
					}

					s.stdin.Close()
					s.waitEnd(t, "on stdin EOF")
					s.assertClean(t)
				})
			}
		}
	}
}

// Item 11: sandboxed calls one after another while a host process keeps a
// CPU busy: none fails (a spawner's reply races no /proc read).
func TestSandboxCallsUnderLoadNeverFail(t *testing.T) {
	const calls = 2000
	const bound = 5 * time.Minute // the whole scenario's
	tag := scenario(t)
	busy := exec.Command("bash", "-c", "while :; do :; done")
	busy.Env = append(os.Environ(), tagVar+"="+tag)
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	busyDone := make(chan struct{})
	go func() {
		_ = busy.Wait()
		close(busyDone)
	}()
	stopBusy := func() {
		_ = busy.Process.Kill()
		<-busyDone
	}
	t.Cleanup(stopBusy)

	s := startWedgeServer(t, tag, wedgeUsers[0], wedgeModes[0].settings)
	s.mustBash(t, "true", answerBound)
	s.sawPlugins()
	began := time.Now()
	var failures []string
	done := 0
	for ; done < calls && time.Since(began) < bound; done++ {
		text, isErr, took, err := s.bash(map[string]any{"command": "true"}, answerBound)
		if err != nil || isErr || text != "" {
			failures = append(failures, fmt.Sprintf("call %d: %q (error result %v) after %s: %v", done, text, isErr, took.Round(time.Millisecond), err))
			if errors.Is(err, context.DeadlineExceeded) || len(failures) >= 20 {
				done++
				break
			}
		}
	}
	elapsed := time.Since(began)
	t.Logf("%d sandboxed calls beside a busy loop in %s (%.1f ms a call), %d failed", done, elapsed.Round(time.Millisecond),
		float64(elapsed.Microseconds())/1000/float64(max(done, 1)), len(failures))
	for _, f := range failures {
		t.Error(f)
	}
	if done < calls && len(failures) == 0 {
		t.Errorf("only %d of %d calls within %s", done, calls, bound)
	}
	s.sawPlugins()
	stopBusy()
	s.stdin.Close()
	s.waitEnd(t, "on stdin EOF")
	s.assertClean(t)
}
