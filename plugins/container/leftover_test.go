package container_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// listing is a command that prints the command line of every process the
// container's /proc shows, one a line, as any later command could look.
const listing = `for d in /proc/[0-9]*; do tr '\0' ' ' < $d/cmdline 2>/dev/null; echo; done`

// escape leaves three sleeps behind that no tag names: their environment
// cleared (env -i; the third's is empty), in a session of their own
// (setsid), their parent gone (a double fork, or the run's shell's end).
func escape(n string) string {
	return `env -i setsid /bin/sh -c '/bin/sleep ` + n + ` & /bin/sleep ` + n + `1 &'; setsid env -i /bin/sleep ` + n + `2 & true`
}

// Nothing a run or a job leaves in a long-lived container outlives it: a
// run's leftovers, even those that cleared their environment and left its
// session, are gone before the next call can see them, and the run's
// result counts them; a finished job's too. What a live job runs stays.
func TestNothingOutlivesItsRunInTheContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			x := newExecutor(t, engine(t, name), nil)
			ctx := t.Context()

			// A live job, whose processes no other run's end may touch: its
			// children, and an orphan that keeps its tag.
			spec, err := x.Resolve(ctx, pluginapi.ExecRequest{Command: "sleep 3001 & sh -c '/bin/sleep 3003 &'; /bin/sleep 3002; wait"})
			if err != nil {
				t.Fatal(err)
			}
			live, err := x.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer live.Kill(ctx)

			res := run(t, x, "", escape("1000")+"; sleep 0.2")
			if code(res) != 0 || res.LeftoversKilled != 3 {
				t.Errorf("a run that left three sleeps (env -i setsid, double fork): exit %d, leftoversKilled %d; want 0 and 3 (%q)", code(res), res.LeftoversKilled, res.Stderr.Text)
			}
			seen := run(t, x, "", listing).Stdout.Text
			if strings.Contains(seen, "sleep 1000") {
				t.Errorf("the next call sees the run's leftovers:\n%s", seen)
			}
			if !strings.Contains(seen, "sleep 3001") || !strings.Contains(seen, "sleep 3002") || !strings.Contains(seen, "sleep 3003") {
				t.Errorf("a live job's processes must outlive another run's end:\n%s", seen)
			}

			spec, err = x.Resolve(ctx, pluginapi.ExecRequest{Command: escape("2000") + "; sleep 0.2"})
			if err != nil {
				t.Fatal(err)
			}
			job, err := x.Start(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if exit, err := job.Wait(ctx); err != nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
				t.Fatalf("the job that escapes: %+v, %v", exit, err)
			}
			if seen := run(t, x, "", listing).Stdout.Text; strings.Contains(seen, "sleep 2000") {
				t.Errorf("the next call sees a finished job's leftovers:\n%s", seen)
			}

			if killed, err := live.Kill(ctx); err != nil || !killed {
				t.Errorf("killing the live job: %v, %v", killed, err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for seen = run(t, x, "", listing).Stdout.Text; strings.Contains(seen, "sleep 300") && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				seen = run(t, x, "", listing).Stdout.Text
			}
			if strings.Contains(seen, "sleep 300") {
				t.Errorf("the killed job's processes are still there:\n%s", seen)
			}
		})
	}
}
