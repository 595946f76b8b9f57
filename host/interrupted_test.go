package host_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// A plugin SIGKILLed under a foreground command settles the run as
// interrupted, with the output seen so far, not as an error that would say
// the command never ran; what the command left running is killed, and
// the plugin is gone.
func TestARunWhosePluginDiesSettlesInterrupted(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if res, err := h.RunRequest(ctx, pluginapi.ExecRequest{Command: "echo ok; exit 3"}, nil); err != nil || res.ExitCode == nil || *res.ExitCode != 3 || res.Interrupted != "" {
		t.Fatalf("a run whose plugin lives: %+v, %v; want exit 3", res, err)
	}

	pluginPID := h.PluginPID()
	var mu sync.Mutex
	var seen, seenErr strings.Builder
	type outcome struct {
		res pluginapi.RunResult
		err error
	}
	ran := make(chan outcome, 1)
	go func() {
		res, err := h.RunRequest(ctx, pluginapi.ExecRequest{Command: "sleep 1004 & echo $!; echo started >&2; wait"}, func(st pluginapi.Stream, b []byte) {
			mu.Lock()
			defer mu.Unlock()
			if st == pluginapi.Stdout {
				seen.Write(b)
			} else {
				seenErr.Write(b)
			}
		})
		ran <- outcome{res, err}
	}()
	sleepPID := readPID(t, func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		s := seen.String()
		seen.Reset()
		return s, nil
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		started := seenErr.String() == "started\n"
		mu.Unlock()
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command's stderr did not come within 10s")
		}
	}
	h.KillPlugin()
	select {
	case o := <-ran:
		if o.err != nil || o.res.ExitCode != nil || o.res.Signal != "" ||
			!strings.Contains(o.res.Interrupted, "exited under the command") || !strings.Contains(o.res.Interrupted, "killed") {
			t.Errorf("the run whose plugin was SIGKILLed: %+v, %v; want it interrupted, saying so", o.res, o.err)
		}
		t.Logf("interrupted: %s", o.res.Interrupted)
		if o.res.Stdout.Text != strconv.Itoa(sleepPID)+"\n" || o.res.Stderr.Text != "started\n" {
			t.Errorf("the interrupted run's output: stdout %q, stderr %q; want the pid and started, as they came live", o.res.Stdout.Text, o.res.Stderr.Text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run whose plugin was SIGKILLed was still waiting 30s later")
	}
	requireGone(t, pluginPID)
	requireGone(t, sleepPID)
}
