package integration

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The note a result carries while a terminal job waits for input.
const waitingNote = "[the command is waiting for input: answer with job_input, or kill it]"

// needProgram skips t when name is not installed, or fails it under
// CI=true, where .ci/run installs it.
func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed (.ci/run installs it): %v", name, err)
		}
		t.Skipf("%s is not installed", name)
	}
}

// ttyStart runs command with tty through bash and returns the job's id
// and the call's text.
func ttyStart(t *testing.T, cs *mcp.ClientSession, command string, yieldMs int) (string, string) {
	t.Helper()
	text, isErr := call(t, cs, "bash", map[string]any{"command": command, "tty": true, "yield_ms": yieldMs})
	id := jobIDPattern.FindString(text)
	if isErr || id == "" {
		t.Fatalf("bash %q with tty: %q (error %v)", command, text, isErr)
	}
	return id, text
}

// input types text to job id and returns what it showed.
func input(t *testing.T, cs *mcp.ClientSession, id, text string, yieldMs int) string {
	t.Helper()
	out, isErr := call(t, cs, "job_input", map[string]any{"job_id": id, "text": text, "yield_ms": yieldMs})
	if isErr {
		t.Fatalf("job_input %q: %q", text, out)
	}
	return out
}

// screenUntil reads job id's screen until it holds want, and returns it.
func screenUntil(t *testing.T, cs *mcp.ClientSession, id, want string) string {
	t.Helper()
	var text string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var isErr bool
		text, isErr = call(t, cs, "job_output", map[string]any{"job_id": id, "screen": true})
		if isErr {
			t.Fatalf("job_output screen: %q", text)
		}
		if strings.Contains(text, want) {
			return text
		}
	}
	t.Fatalf("the screen of %s never showed %q; last:\n%s", id, want, text)
	return ""
}

// screenUntilMatch reads job id's screen until re matches it, and
// returns it.
func screenUntilMatch(t *testing.T, cs *mcp.ClientSession, id string, re *regexp.Regexp) string {
	t.Helper()
	var text string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var isErr bool
		text, isErr = call(t, cs, "job_output", map[string]any{"job_id": id, "screen": true})
		if isErr {
			t.Fatalf("job_output screen: %q", text)
		}
		if re.MatchString(text) {
			return text
		}
	}
	t.Fatalf("the screen of %s never matched %s; last:\n%s", id, re, text)
	return ""
}

// outputUntil types nothing and reads job id's output (job_input with
// empty text waits for what it shows) until what it gathered holds want.
func outputUntil(t *testing.T, cs *mcp.ClientSession, id, first, want string) string {
	t.Helper()
	got := first
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(got, want) && time.Now().Before(deadline); {
		text, isErr := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 1000})
		if isErr {
			t.Fatalf("job_output: %q", text)
		}
		got += text
	}
	if !strings.Contains(got, want) {
		t.Fatalf("job %s never showed %q: %q", id, want, got)
	}
	return got
}

// waitEnded waits until job id has ended, and returns job_output's text.
func waitEnded(t *testing.T, cs *mcp.ClientSession, id string) string {
	t.Helper()
	var all string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		text, _ := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 1000})
		all += text
		if !strings.Contains(text, "[job "+id+": running]") {
			return all
		}
	}
	t.Fatalf("job %s still runs: %q", id, all)
	return ""
}

func TestMCPTTYListsJobInput(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		res, err := x.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]map[string]any{}
		for _, tool := range res.Tools {
			schema, _ := tool.InputSchema.(map[string]any)
			props, _ := schema["properties"].(map[string]any)
			found[tool.Name] = props
		}
		if found["job_input"] == nil || found["bash"]["tty"] == nil || found["bash"]["yield_ms"] == nil || found["job_output"]["screen"] == nil {
			t.Fatalf("want job_input, bash's tty and yield_ms, job_output's screen: %v", found)
		}
		text, _ := found["job_input"]["text"].(map[string]any)["description"].(string)
		if !strings.Contains(text, "<Enter>") || !strings.Contains(text, "<C-c>") {
			t.Errorf("job_input's text does not teach the keys: %q", text)
		}
	})
}

// read -p's prompt comes back with the note that the command waits, and
// the answer typed with job_input reaches it.
func TestMCPTTYReadPrompt(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		cs := x.cs
		id, text := ttyStart(t, cs, `read -p 'your name? ' n; echo "hello, $n"`, 5000)
		if !strings.Contains(text, "your name? ") || !strings.Contains(text, waitingNote) {
			t.Fatalf("bash tty: %q, want the prompt and the waiting note", text)
		}
		// job_output says so too, with nothing new to read.
		if text, _ := call(t, cs, "job_output", map[string]any{"job_id": id}); !strings.Contains(text, waitingNote) {
			t.Errorf("job_output of a job at a prompt: %q", text)
		}
		text = input(t, cs, id, "Ada<Enter>", 5000)
		if !strings.Contains(text, "hello, Ada") || !strings.Contains(text, "[job "+id+" has ended]") || strings.Contains(text, waitingNote) {
			t.Errorf("after the answer: %q", text)
		}
		if text, isErr := call(t, cs, "job_input", map[string]any{"job_id": id, "text": "more<Enter>"}); !isErr || !strings.Contains(text, "finished") {
			t.Errorf("input to a finished job: %q (error %v)", text, isErr)
		}
	})
}

// A command that does not read is never said to wait; keys that are no
// keys are refused, and nothing is sent; a job without a terminal has no
// input.
func TestMCPTTYWaitingIsAFact(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		cs := x.cs
		id, text := ttyStart(t, cs, `sleep 0.5; read -p 'ready> ' x; echo got:$x`, 200)
		if strings.Contains(text, waitingNote) {
			t.Errorf("a sleeping command said to wait: %q", text)
		}
		text = outputUntil(t, cs, id, text, "ready> ")
		if text, _ := call(t, cs, "job_output", map[string]any{"job_id": id}); !strings.Contains(text, waitingNote) {
			t.Errorf("job_output at the prompt: %q", text)
		}
		if text, isErr := call(t, cs, "job_input", map[string]any{"job_id": id, "text": "a<Bogus>b<Enter>"}); !isErr || !strings.Contains(text, "<Bogus>") {
			t.Errorf("an unknown key: %q (error %v)", text, isErr)
		}
		if text := input(t, cs, id, "ok<Enter>", 5000); !strings.Contains(text, "got:ok") {
			t.Errorf("after the refused keys, the answer: %q (the refused call must have sent nothing)", text)
		}
		bg, _ := call(t, cs, "bash", map[string]any{"command": "sleep 30", "run_in_background": true})
		bgID := jobIDPattern.FindString(bg)
		if text, isErr := call(t, cs, "job_input", map[string]any{"job_id": bgID, "text": "x"}); !isErr || !strings.Contains(text, "without a terminal") {
			t.Errorf("input to a job without a terminal: %q (error %v)", text, isErr)
		}
		if text, isErr := call(t, cs, "job_output", map[string]any{"job_id": bgID, "screen": true}); !isErr || !strings.Contains(text, "without a terminal") {
			t.Errorf("the screen of a job without a terminal: %q (error %v)", text, isErr)
		}
		call(t, cs, "job_kill", map[string]any{"job_id": bgID})
	})
}

// A python3 REPL defines a function and calls it.
func TestMCPTTYPythonREPL(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		x.need(t, "python3")
		cs := x.cs
		id, text := ttyStart(t, cs, "python3 -q", 10000)
		text = outputUntil(t, cs, id, text, ">>> ")
		text = input(t, cs, id, "def sq(x):<Enter>", 5000)
		if !strings.Contains(text, "... ") {
			text = outputUntil(t, cs, id, text, "... ")
		}
		input(t, cs, id, "    return x * x<Enter><Enter>", 5000)
		text = input(t, cs, id, "print(sq(12) + 1)<Enter>", 5000)
		if !strings.Contains(text, "145") {
			outputUntil(t, cs, id, text, "145")
		}
		input(t, cs, id, "<C-d>", 5000)
		waitEnded(t, cs, id)
	})
}

// git add -p stages one of two hunks.
func TestMCPTTYGitAddPatch(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		x.need(t, "git")
		cs := x.cs
		// Where the command runs: bash-sandbox refuses a new .git in its
		// workspace, not in its $TMPDIR.
		dir := x.scratch(t)
		var lines []string
		for i := range 40 {
			lines = append(lines, "line "+strconv.Itoa(i))
		}
		setup := fmt.Sprintf(`(cd %s && git init -q && git config user.email t@t && git config user.name t && printf '%%s\n' %s > f && git add f && git commit -qm one && sed -i -e 's/^line 2$/line two/' -e 's/^line 37$/line thirty-seven/' f)`,
			dir, strings.Join(lines, " "))
		if text, isErr := call(t, cs, "bash", map[string]any{"command": strings.ReplaceAll(setup, "line ", "line\\ ")}); isErr || strings.Contains(text, "exit code") {
			t.Fatalf("setting the repository up: %q", text)
		}
		id, text := ttyStart(t, cs, "cd "+dir+" && git add -p", 5000)
		text = outputUntil(t, cs, id, text, "Stage this hunk")
		text = input(t, cs, id, "y<Enter>", 5000)
		text = outputUntil(t, cs, id, text, "Stage this hunk")
		input(t, cs, id, "n<Enter>", 5000)
		waitEnded(t, cs, id)
		staged, _ := call(t, cs, "bash", map[string]any{"command": "git -C " + dir + " diff --cached | grep '^+line'; git -C " + dir + " diff | grep '^+line'"})
		if staged != "+line two\n+line thirty-seven" {
			t.Errorf("staged, then not staged: %q, want the first hunk staged and the second not", staged)
		}
	})
}

// less pages a long file with the space bar and quits with q.
func TestMCPTTYLess(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		x.need(t, "less")
		cs := x.cs
		file := x.scratch(t) + "/long.txt"
		id, _ := ttyStart(t, cs, "printf 'row %s\\n' {1..500} > "+file+" && less "+file, 3000)
		first := screenUntil(t, cs, id, "row 1\n")
		// GNU less switches to the alternate screen; busybox's (the
		// container's) draws on the main one.
		if strings.Contains(first, "row 30\n") || (x.engine == "" && !strings.Contains(first, "alternate screen on")) {
			t.Errorf("less's first page: %q", first)
		}
		input(t, cs, id, "<Space>", 3000)
		if second := screenUntil(t, cs, id, "row 30\n"); strings.Contains(second, "row 1\n") {
			t.Errorf("after a space: %q", second)
		}
		input(t, cs, id, "q", 3000)
		waitEnded(t, cs, id)
	})
}

// vi writes a file from keystrokes; the file is read where vi ran.
func TestMCPTTYVi(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		x.need(t, "vi")
		cs := x.cs
		file := x.scratch(t) + "/note.txt"
		id, _ := ttyStart(t, cs, "vi "+file, 3000)
		screenUntil(t, cs, id, "note.txt")
		if text := input(t, cs, id, "iwritten from vi<Esc>", 3000); !strings.Contains(text, "written from vi") || !strings.Contains(text, "alternate screen on") {
			t.Errorf("job_input to vi: %q, want its screen", text)
		}
		// vim in a sandbox cannot write ~/.viminfo (outside the writable
		// roots) and says so, asking for Enter, as a model would see it.
		if text := input(t, cs, id, ":wq<Enter>", 3000); strings.Contains(text, "Press ENTER") {
			t.Logf("vi after :wq: %q", text)
			input(t, cs, id, "<Enter>", 3000)
		}
		waitEnded(t, cs, id)
		if got := x.cat(t, file+"; wc -c < "+file); got != "written from vi\n16" {
			t.Errorf("the file vi wrote, and its size: %q, want a line of 16 bytes", got)
		}
	})
}

// Ctrl-C interrupts sleep 100 in an interactive bash, which then runs the
// next command.
func TestMCPTTYCtrlCInInteractiveBash(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		cs := x.cs
		id, text := ttyStart(t, cs, "PS1='$ ' bash --norc --noprofile -i", 5000)
		outputUntil(t, cs, id, text, "$ ")
		text = input(t, cs, id, "sleep 100<Enter>", 300)
		if strings.Contains(text, waitingNote) {
			t.Errorf("bash running sleep 100 said to wait for input: %q", text)
		}
		var sleeping []int
		for deadline := time.Now().Add(10 * time.Second); len(sleeping) == 0; time.Sleep(50 * time.Millisecond) {
			if sleeping = x.running(t, "sleep 100"); len(sleeping) == 0 && time.Now().After(deadline) {
				t.Fatal("no sleep 100 runs")
			}
		}
		input(t, cs, id, "<C-c>", 2000)
		text = input(t, cs, id, "echo after-$((6 * 7))<Enter>", 5000)
		if !strings.Contains(text, "after-42") {
			outputUntil(t, cs, id, text, "after-42")
		}
		x.awaitGone(t, "sleep 100", sleeping, "after Ctrl-C and the next command")
		input(t, cs, id, "exit<Enter>", 5000)
		waitEnded(t, cs, id)
	})
}

// The screen of top shows its header (procps' or busybox's).
func TestMCPTTYTopScreen(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		x.need(t, "top")
		cs := x.cs
		id, _ := ttyStart(t, cs, "top", 2000)
		s := screenUntilMatch(t, cs, id, regexp.MustCompile(`(?i)load average`))
		if !regexp.MustCompile(`Tasks:|CPU:`).MatchString(s) || !regexp.MustCompile(`\[screen 24x80; cursor at row \d+, column \d+`).MatchString(s) {
			t.Errorf("top's screen: %q", s)
		}
		input(t, cs, id, "q", 3000)
		waitEnded(t, cs, id)
	})
}

// An owner runs at most 64 terminal jobs: the 65th is refused, saying the
// limit; every one of them dies with the server. The limit is the host's,
// counted before any executor, so it runs on bash-local and on one remote
// executor (the container, on Docker), whose 64 terminals are made where
// its commands run; the others would only make more of them.
func TestMCPTTYLimitPerOwner(t *testing.T) {
	stdioOnly(t, "an HTTP session runs at most mcp.maxJobsPerSession (16 by default) jobs of any kind")
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		cs := x.cs
		for i := range 64 {
			if text, isErr := call(t, cs, "bash", map[string]any{"command": "cat", "tty": true, "yield_ms": 1}); isErr {
				t.Fatalf("terminal job %d: %q", i+1, text)
			}
		}
		text, isErr := call(t, cs, "bash", map[string]any{"command": "cat", "tty": true, "yield_ms": 1})
		if !isErr || !strings.Contains(text, "64 terminal jobs run, the limit of one owner (64)") {
			t.Fatalf("the 65th terminal job: %q (error %v)", text, isErr)
		}
		// One that ended leaves room for another.
		jobs, _ := call(t, cs, "jobs", nil)
		id := jobIDPattern.FindString(jobs)
		call(t, cs, "job_kill", map[string]any{"job_id": id})
		if text, isErr := call(t, cs, "bash", map[string]any{"command": "cat", "tty": true, "yield_ms": 1}); isErr {
			t.Errorf("a terminal job after one ended: %q", text)
		}
		// A job without a terminal does not count.
		if text, isErr := call(t, cs, "bash", map[string]any{"command": "true", "run_in_background": true}); isErr {
			t.Errorf("a background job at the terminal limit: %q", text)
		}
	}, "bash-local", "container-docker")
}

// A reload kills the terminal jobs with the old plugin: all are gone,
// nothing of them left (their shells on this machine; the container the
// old plugin made; the SSH target's processes).
func TestMCPTTYReloadKillsTerminalJobs(t *testing.T) {
	forEachExecutor(t, func(t *testing.T, x *ttyTarget) {
		cs := x.cs
		var ids []string
		var pids []int
		for range 3 {
			id, text := ttyStart(t, cs, `echo "pid=$$"; read x`, 5000)
			m := regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(text)
			if m == nil {
				t.Fatalf("no pid in %q", text)
			}
			pid, _ := strconv.Atoi(m[1])
			ids, pids = append(ids, id), append(pids, pid)
		}
		// The shells as this machine sees them (bash-sandbox's $$ is a pid
		// in its run's namespace), by the scenario's tag.
		var shells []wedgeProc
		if !x.remote {
			for _, pid := range survivorsAfter(x.tag, 0) {
				if p, ok := wedgeStat(pid); ok && strings.Contains(strings.Join(argvOf(pid), " "), "read x") {
					shells = append(shells, p)
				}
			}
			if len(shells) < 3 {
				t.Fatalf("the terminal jobs' shells on this machine: %v, want 3 or more", shells)
			}
		}
		var containers []string
		if x.addr != "" {
			if containers = sessionContainers(t, x.addr, mcpserver.StdioOwner); len(containers) == 0 {
				t.Fatal("the engine lists no container of the session")
			}
		}
		old := plugins(x.cmd.Process.Pid)
		if err := x.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			text := waitEnded(t, cs, id)
			if !strings.Contains(text, "killed") {
				t.Errorf("job %s after the reload: %q", id, text)
			}
			if text, isErr := call(t, cs, "job_input", map[string]any{"job_id": id, "text": "x<Enter>"}); !isErr || !strings.Contains(text, "finished") {
				t.Errorf("input to job %s after the reload: %q", id, text)
			}
		}
		call(t, cs, "jobs", nil) // the notices of their end
		x.awaitReloaded(t, old)
		for _, p := range shells {
			if p.alive() {
				t.Errorf("the terminal job's shell %d survived the reload: %q", p.pid, argvOf(p.pid))
			}
		}
		switch {
		case x.addr != "":
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				now := sessionContainers(t, x.addr, mcpserver.StdioOwner)
				if !slices.ContainsFunc(containers, func(id string) bool { return slices.Contains(now, id) }) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the old plugin's container %v is still there 15s after the reload (now %v)", containers, now)
				}
			}
		case x.remote:
			out, _ := call(t, cs, "bash", map[string]any{"command": fmt.Sprintf("for p in %d %d %d; do [ -d /proc/$p ] && tr '\\0' ' ' < /proc/$p/cmdline && echo; done; true", pids[0], pids[1], pids[2])})
			if strings.Contains(out, "read x") {
				t.Errorf("a terminal job's shell survived the reload on the target: %q", out)
			}
		}
		// The server starts terminal jobs on the new plugin.
		id, text := ttyStart(t, cs, `read -p 'again? ' x`, 5000)
		if !strings.Contains(text, "again? ") {
			t.Errorf("a terminal job after the reload: %q", text)
		}
		call(t, cs, "job_kill", map[string]any{"job_id": id})
	})
}

// A terminal job dies with its owner's session: over HTTP, once the
// session closed and the grace passed, its shell and what it runs are gone.
func TestMCPTTYDiesWithItsHTTPSession(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings("jobGraceMs: 200"), "DSH_TEST_MCP_TOKEN="+testToken)
	cs, _ := httpSession(t, srv.url, testToken)
	id, text := ttyStart(t, cs, `echo "pid=$$"; sleep 1012 & read x`, 5000)
	m := regexp.MustCompile(`pid=(\d+)`).FindStringSubmatch(text)
	if m == nil || !strings.Contains(text, waitingNote) {
		t.Fatalf("terminal job %s: %q", id, text)
	}
	pid, _ := strconv.Atoi(m[1])
	// The shell reads once it forked the sleep, which may not have
	// executed sleep yet.
	for deadline := time.Now().Add(10 * time.Second); len(procsRunning(tag, "sleep 1012")) != 1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the terminal job's sleep is not running")
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("closing the session: %v", err)
	}
	for deadline := time.Now().Add(15 * time.Second); syscall.Kill(pid, 0) == nil || len(procsRunning(tag, "sleep 1012")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the terminal job outlived its closed session and the grace by 15s")
		}
	}
}
