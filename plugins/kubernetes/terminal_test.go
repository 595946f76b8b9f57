package kubernetes_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// A terminal job in a pod the executor made, in each sandbox mode's shape
// (a read-only root, capabilities dropped, the runtime's default seccomp
// profile): it sees a terminal, takes input, and is told waiting for input
// as an interactive shell waits (bash's readline, pselect6; busybox's line
// editing, poll), not only for a plain read.
func TestTerminalsInPodsOfEachMode(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "workspace": map[string]any{"mountPath": "/work"}}))); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []pluginapi.SandboxMode{pluginapi.SandboxReadOnly, pluginapi.SandboxWorkspaceWrite} {
		for _, shell := range []string{"exec bash --norc --noprofile -i", "exec sh -i", `printf 'answer? '; read -r x; echo "got $x"`} {
			spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: shell, SandboxMode: mode, Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := x.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			var all strings.Builder
			waiting := false
			for deadline := time.Now().Add(10 * time.Second); !waiting && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				r, err := p.ReadOutput(ctx)
				if err != nil {
					t.Fatal(err)
				}
				all.WriteString(r.Delta)
				waiting = r.WaitingForInput
			}
			if !waiting {
				t.Errorf("%s on a terminal in %s's pod: no read said it waits for input within 10 s; reads gave %q", shell, mode, all.String())
			}
			if err := pluginapi.WriteInput(ctx, p, []byte("echo \"in-$((20+1))\"; exit 3\n"), false); err != nil {
				t.Fatal(err)
			}
			exit, err := p.Wait(ctx)
			switch {
			case err != nil:
				t.Fatal(err)
			case strings.HasPrefix(shell, "exec") && (exit.ExitCode == nil || *exit.ExitCode != 3):
				t.Errorf("%s in %s's pod, told to exit 3: %+v", shell, mode, exit)
			}
			want := "in-21" // the shell's output, not the terminal's echo
			if !strings.HasPrefix(shell, "exec") {
				want = "got echo"
			}
			if r, err := p.ReadOutput(ctx); err != nil || !strings.Contains(all.String()+r.Delta, want) {
				t.Errorf("%s in %s's pod: the input's output: %q, %v; want %s", shell, mode, all.String()+r.Delta, err, want)
			}
		}
	}
}

// startTerminal starts command on a terminal of 24x80 in partition, killed
// when the test ends, and reads it until want.
func startTerminal(t *testing.T, x pluginapi.ShellExecutor, partition, command, want string) (pluginapi.ShellProcess, string) {
	t.Helper()
	ctx := t.Context()
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: command, Partition: partition, Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.Kill(context.Background())
		_, _ = p.Wait(context.Background())
	})
	return p, readTerminal(t, p, want)
}

// readTerminal reads p until what came since the call holds want.
func readTerminal(t *testing.T, p pluginapi.ShellProcess, want string) string {
	t.Helper()
	var all strings.Builder
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		r, err := p.ReadOutput(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(r.Delta)
		if strings.Contains(all.String(), want) {
			return all.String()
		}
	}
	t.Fatalf("no %q on the terminal within 60 s; got %q", want, all.String())
	return ""
}

// Terminals of two partitions are each in their own pod's devpts: B sees
// its own terminal alone in /dev/pts (A has two), what it writes to every
// terminal it can open never reaches A's, and input written to A's job
// goes to A alone.
func TestTerminalsStayInTheirPartition(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	const prompt = `tty; printf 'answer? '; IFS= read -r x; echo "got $x"`
	a, a0 := startTerminal(t, x, "session-A", prompt, "answer? ")
	startTerminal(t, x, "session-A", prompt, "answer? ")
	b, _ := startTerminal(t, x, "session-B", prompt, "answer? ")
	if pa, pb := c.partitionPods(t, "session-A"), c.partitionPods(t, "session-B"); len(pa) != 1 || len(pb) != 1 || pa[0] == pb[0] {
		t.Fatalf("the partitions' pods: A %v, B %v; want one each, not the same", pa, pb)
	}
	out := partitionRun(t, x, "session-B",
		`for p in /dev/pts/[0-9]*; do echo "injected-from-b $p"; echo "injected-from-b" > $p && echo "wrote $p"; done 2>&1; true`)
	if n := strings.Count(out, "injected-from-b /dev/pts/"); n != 1 || !strings.Contains(out, "wrote /dev/pts/") {
		t.Errorf("B sees %d terminals in its /dev/pts; want its own alone, written (A's two are in A's pod):\n%s", n, out)
	}
	if err := pluginapi.WriteInput(ctx, a, []byte("from-a\n"), false); err != nil {
		t.Fatal(err)
	}
	if got := a0 + readTerminal(t, a, "got from-a"); strings.Contains(got, "injected-from-b") {
		t.Errorf("B's write reached A's terminal: %q", got)
	}
	if err := pluginapi.WriteInput(ctx, b, []byte("from-b\n"), false); err != nil {
		t.Fatal(err)
	}
	if got := readTerminal(t, b, "got from-b"); strings.Contains(got, "from-a") {
		t.Errorf("A's input reached B's terminal: %q", got)
	}
}
