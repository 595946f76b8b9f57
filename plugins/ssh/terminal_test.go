package ssh_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// An interactive shell on a terminal on the far side of SSH is told
// waiting for input as it waits (bash's readline, pselect6), runs what is
// typed, and exits as told.
func TestAnInteractiveShellOverSSH(t *testing.T) {
	ctx := t.Context()
	x := ssh.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(settingsJSON(t, target(t, nil)))); err != nil {
		t.Fatal(err)
	}
	spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "exec bash --norc --noprofile -i", Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := x.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(ctx)
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
		t.Errorf("bash -i over SSH: no read said it waits for input within 10 s; reads gave %q", all.String())
	}
	if err := pluginapi.WriteInput(ctx, p, []byte("echo \"in-$((20+1))\"; exit 3\n"), false); err != nil {
		t.Fatal(err)
	}
	if exit, err := p.Wait(ctx); err != nil || exit.ExitCode == nil || *exit.ExitCode != 3 {
		t.Errorf("bash -i told to exit 3: %+v, %v", exit, err)
	}
	if r, err := p.ReadOutput(ctx); err != nil || !strings.Contains(all.String()+r.Delta, "in-21") {
		t.Errorf("the typed command's output: %q, %v; want in-21", all.String()+r.Delta, err)
	}
}
