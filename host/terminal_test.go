package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// A terminal job's screen is kept by the host as the job writes, whether
// or not its owner reads: Yield returns once it waits at its prompt, Type
// sends named keys, Screen shows the terminal with the cursor, and the
// last screen stays readable once the job ended (TestMain checks that no
// goroutine is left).
func TestTerminalJobScreenYieldAndType(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	since := time.Now()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{
		Command:  `printf 'first\n'; read -r -p 'name? ' n; printf '\033[31mhello\033[0m %s\n' "$n"; stty size`,
		Terminal: &pluginapi.Terminal{Rows: 10, Cols: 40},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := jobs.Yield(ctx, "alice", info.ID, since, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !r.WaitingForInput || !strings.Contains(r.Text, "name? ") || r.Job.State != host.JobRunning {
		t.Fatalf("Yield at the prompt: %+v", r)
	}
	s, _, err := jobs.Screen(ctx, "alice", info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Text != "first\nname?" || s.CursorRow != 1 || s.CursorCol != 6 || s.Rows != 10 || s.Cols != 40 || !s.WaitingForInput {
		t.Errorf("the screen at the prompt: %+v", s)
	}
	if err := jobs.Type(ctx, "alice", info.ID, "Ada<Nope>"); err == nil || !strings.Contains(err.Error(), "<Nope>") {
		t.Errorf("an unknown key: %v", err)
	}
	if err := jobs.Resize(ctx, "alice", info.ID, 12, 50); err != nil {
		t.Fatal(err)
	}
	if err := jobs.Type(ctx, "alice", info.ID, "Ada<Enter>"); err != nil {
		t.Fatal(err)
	}
	r, err = jobs.Yield(ctx, "alice", info.ID, time.Now(), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Job.State != host.JobExited || r.WaitingForInput {
		t.Errorf("Yield after the answer: %+v", r)
	}
	if got := host.TerminalText(r.Text); !strings.Contains(got, "hello Ada\n12 50") {
		t.Errorf("the output after the answer, cleaned: %q", got)
	}
	s, _, err = jobs.Screen(ctx, "alice", info.ID)
	if err != nil || s.Text != "first\nname? Ada\nhello Ada\n12 50" || s.Cols != 50 {
		t.Errorf("the last screen: %+v %v", s, err)
	}
	if err := jobs.Type(ctx, "alice", info.ID, "late"); !errors.Is(err, pluginapi.ErrInputClosed) {
		t.Errorf("typing to a finished job: %v", err)
	}
	bg, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := jobs.Screen(ctx, "alice", bg.ID); !errors.Is(err, host.ErrNoTerminal) {
		t.Errorf("the screen of a job without a terminal: %v", err)
	}
}

// What a terminal job wrote and its owner has not read keeps its head and
// its tail within the job's output cap, and says what the middle lost.
func TestTerminalJobKeepsHeadAndTail(t *testing.T) {
	jobs, _ := jobsOn(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	info, err := jobs.Start(ctx, "alice", pluginapi.ExecRequest{
		Command: `seq -f 'line %g' 1 20000`, Terminal: &pluginapi.Terminal{Rows: 24, Cols: 80}, StdoutMaxBytes: 2000,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Wait(ctx, "alice", info.ID); err != nil {
		t.Fatal(err)
	}
	r, err := jobs.Yield(ctx, "alice", info.ID, time.Now(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	text := host.TerminalText(r.Text)
	if !strings.HasPrefix(text, "line 1\nline 2\n") || !strings.HasSuffix(text, "line 19999\nline 20000\n") ||
		!strings.Contains(text, "bytes of output left out here") || len(r.Text) > 2200 {
		t.Errorf("a long output's head and tail (%d bytes): %q", len(r.Text), text)
	}
	s, _, err := jobs.Screen(ctx, "alice", info.ID)
	if err != nil || !strings.HasSuffix(s.Text, "line 20000") {
		t.Errorf("the last screen: %q %v", s.Text, err)
	}
}
