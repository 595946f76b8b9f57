package kubernetes_test

import (
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
