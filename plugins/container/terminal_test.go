package container_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/internal/protect/persisttest"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// startTerminal starts command on a terminal of 24x80 (in mode, and
// partition), killed when the test ends.
func startTerminal(t *testing.T, x pluginapi.ShellExecutor, mode pluginapi.SandboxMode, partition, command string) pluginapi.ShellProcess {
	t.Helper()
	ctx := t.Context()
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: command, SandboxMode: mode, Partition: partition,
		Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.Kill(t.Context())
		_, _ = p.Wait(t.Context())
	})
	return p
}

// readTerminal reads p until what came since the call holds want, and
// returns it; it fails the test after 20 s.
func readTerminal(t *testing.T, p pluginapi.ShellProcess, want string) string {
	t.Helper()
	var all strings.Builder
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := p.ReadOutput(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(r.Delta)
		if strings.Contains(all.String(), want) {
			return all.String()
		}
	}
	t.Fatalf("no %q on the terminal within 20 s; got %q", want, all.String())
	return ""
}

// typeLine writes line to p's terminal.
func typeLine(t *testing.T, p pluginapi.ShellProcess, line string) {
	t.Helper()
	if err := pluginapi.WriteInput(t.Context(), p, []byte(line), false); err != nil {
		t.Fatalf("WriteInput(%q): %v", line, err)
	}
}

// The agent's no-new-repositories guard holds for a terminal's command as
// for a plain one (it is forked from the guard's thread the same way):
// neither the command the terminal starts with nor one typed into the
// interactive shell it becomes can make a .git beneath the workspace, and
// each hears the refusal; ordinary work on the terminal goes on.
func TestContainerGuardOnATerminal(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := persisttest.NewRepo(t)
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			p := startTerminal(t, x, pluginapi.SandboxWorkspaceWrite, "",
				`mkdir -p s1 && mkdir s1/.git; echo "first-$?"; exec sh -i`)
			got := readTerminal(t, p, "first-")
			// What the shell prints is told from what the terminal echoes
			// by an expansion: the echo shows "$((0+$?))", the output a
			// number.
			typeLine(t, p, "mkdir -p s2 && mkdir s2/.git; echo \"second-$((0+$?))\"\n")
			got += readTerminal(t, p, "second-1")
			typeLine(t, p, "mkdir -p s3 && echo gitdir: /x > s3/.git; echo \"third-$((0+$?))\"\n")
			got += readTerminal(t, p, "third-1")
			typeLine(t, p, "echo work > w && cat w && echo \"fourth-$((0+$?))\"\n")
			got += readTerminal(t, p, "fourth-0")
			for _, made := range []string{"s1/.git", "s2/.git", "s3/.git"} {
				if _, err := os.Lstat(filepath.Join(ws, made)); !os.IsNotExist(err) {
					t.Errorf("ESCAPE: a terminal's command made %s (%v); the terminal showed %q", made, err, got)
				}
			}
			if !strings.Contains(got, "first-1") || strings.Count(got, "ermitted") < 3 {
				t.Errorf("each refusal must be heard on the terminal (EPERM, a failed command); got %q", got)
			}
			if data, err := os.ReadFile(filepath.Join(ws, "w")); err != nil || string(data) != "work\n" {
				t.Errorf("ordinary work on the terminal: w is %q, %v", data, err)
			}
			typeLine(t, p, "exit 0\n")
			if exit, err := p.Wait(t.Context()); err != nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
				t.Errorf("the terminal's shell after exit: %+v, %v", exit, err)
			}
		})
	}
}

// Terminals of two partitions, through the real plugin, are each in their
// own container's devpts: B sees its own terminal alone there, and what it
// writes to every terminal it can open reaches B's own, never A's; input written to A's job goes to A alone;
// and neither sees the other's terminal's processes.
func TestTerminalsStayInTheirPartition(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			var label string
			t.Cleanup(func() {
				if label != "" {
					requireNoContainersOf(t, addr, label, 10*time.Second)
				}
			})
			x, pid := pluginapitest.LaunchPID(t, exec.Command(pluginBin))
			label = strconv.Itoa(pid) + "@" + startTime(t, pid)
			if err := x.(pluginapi.Configurable).Configure(t.Context(), settings(t, addr, nil)); err != nil {
				t.Fatal(err)
			}
			const prompt = `tty; printf 'answer? '; IFS= read -r x; echo "got $x"`
			a := startTerminal(t, x, pluginapi.SandboxNone, "session-A", "sleep 9191 & "+prompt)
			a0 := readTerminal(t, a, "answer? ")
			// A second terminal in A: A's devpts holds two, B's one.
			a2 := startTerminal(t, x, pluginapi.SandboxNone, "session-A", prompt)
			readTerminal(t, a2, "answer? ")
			b := startTerminal(t, x, pluginapi.SandboxNone, "session-B", prompt)
			b0 := readTerminal(t, b, "answer? ")
			if !strings.Contains(a0, "/dev/pts/") || !strings.Contains(b0, "/dev/pts/") {
				t.Fatalf("each terminal job must see a terminal (tty); A %q, B %q", a0, b0)
			}
			// From B, a write to every terminal of its devpts, and a look
			// at its processes.
			out, c := partitionRun(t, x, "session-B",
				`for p in /dev/pts/[0-9]*; do echo "injected-from-b $p"; echo "injected-from-b" > $p && echo "wrote $p"; done 2>&1; ls -l /dev/pts; `+seen+`; true`)
			if c != 0 {
				t.Fatalf("B's probe: exit %d: %s", c, out)
			}
			if n := strings.Count(out, "injected-from-b /dev/pts/"); n != 1 {
				t.Errorf("B sees %d terminals in its /dev/pts; want its own alone (A's two are in A's devpts):\n%s", n, out[:min(len(out), 600)])
			}
			if strings.Contains(out, "sleep 9191") {
				t.Errorf("B sees A's terminal job (sleep 9191):\n%s", out)
			}
			typeLine(t, a, "from-a\n")
			got := readTerminal(t, a, "got from-a")
			if strings.Contains(a0+got, "injected-from-b") {
				t.Errorf("B's write reached A's terminal: %q", a0+got)
			}
			typeLine(t, b, "from-b\n")
			gotB := readTerminal(t, b, "got from-b")
			if strings.Contains(gotB, "from-a") {
				t.Errorf("A's input reached B's terminal: %q", gotB)
			}
			if !strings.Contains(out, "wrote /dev/pts/") {
				// B could open no terminal at all: then what it did not
				// reach proves little. Say what it saw.
				t.Logf("B opened no terminal of its devpts:\n%s", out[:min(len(out), 600)])
			}
		})
	}
}

// waitsForInput reads p until a read says it waits for input, within 10 s.
func waitsForInput(t *testing.T, p pluginapi.ShellProcess) (bool, string) {
	t.Helper()
	var all strings.Builder
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := p.ReadOutput(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(r.Delta)
		if r.WaitingForInput {
			return true, all.String()
		}
	}
	return false, all.String()
}

// Waiting for input is told in the container for the ways shells wait
// there, not only for a plain read: bash's readline (pselect6) and
// busybox's line editing (poll), whose descriptor sets the agent reads in
// the shell's memory under the container's seccomp profile; in each
// sandbox mode.
func TestWaitingForInputInAContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, _ := dirs(t)
			x := newExecutor(t, addr, map[string]any{"workspace": ws})
			for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite, pluginapi.SandboxDangerFullAccess} {
				for _, shell := range []string{"exec bash --norc --noprofile -i", "exec sh -i", "read -r x; echo got $x"} {
					p := startTerminal(t, x, mode, "", shell)
					if waiting, got := waitsForInput(t, p); !waiting {
						t.Errorf("%s on a terminal, %s: no read said it waits for input within 10 s; reads gave %q", shell, mode, got)
					}
					_, _ = p.Kill(t.Context())
				}
			}
		})
	}
}
