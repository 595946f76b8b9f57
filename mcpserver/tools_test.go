package mcpserver

import (
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// A job's end says why it was killed (a reload, a crash, the host closing,
// job_kill) rather than only the signal that did it.
func TestDescribeEndSaysWhyAJobWasKilled(t *testing.T) {
	three := 3
	for _, tc := range []struct {
		info host.JobInfo
		want string
	}{
		{host.JobInfo{State: host.JobRunning}, "running"},
		{host.JobInfo{State: host.JobExited, Exit: pluginapi.ProcessExit{ExitCode: &three}}, "exited with code 3"},
		{host.JobInfo{State: host.JobKilled, Exit: pluginapi.ProcessExit{Killed: true, Signal: "SIGTERM", KillReason: host.ErrReloaded.Error()}}, "killed: executor reloaded"},
		{host.JobInfo{State: host.JobKilled, Exit: pluginapi.ProcessExit{Killed: true, Signal: "SIGKILL", KillReason: host.ErrPluginDied.Error()}}, "killed: executor plugin exited unexpectedly"},
		{host.JobInfo{State: host.JobKilled, Exit: pluginapi.ProcessExit{Killed: true, Signal: "SIGTERM", KillReason: host.ErrHostClosed.Error()}}, "killed: the host closed"},
		{host.JobInfo{State: host.JobKilled, Exit: pluginapi.ProcessExit{Killed: true, Signal: "SIGTERM", KillReason: "killed by the caller"}}, "killed by the caller"},
		{host.JobInfo{State: host.JobExited, Exit: pluginapi.ProcessExit{Signal: "SIGSEGV"}}, "killed by signal SIGSEGV"},
	} {
		if got := describeEnd(tc.info); got != tc.want {
			t.Errorf("describeEnd(%+v) = %q, want %q", tc.info.Exit, got, tc.want)
		}
	}
}

// The note on output dropped between reads names the spill files there
// are, and never an empty path.
func TestDroppedNoteNamesOnlyRealPaths(t *testing.T) {
	for _, tc := range []struct {
		spill [2]string
		want  string
	}{
		{[2]string{"/s/out", "/s/err"}, "[some output was dropped between reads; the full output is in /s/out and /s/err]"},
		{[2]string{"/s/out", ""}, "[some output was dropped between reads; the full output is in /s/out]"},
		{[2]string{"", ""}, "[some output was dropped between reads; no spill file holds it]"},
	} {
		if got := droppedNote(tc.spill); got != tc.want {
			t.Errorf("droppedNote(%q) = %q, want %q", tc.spill, got, tc.want)
		}
	}
}

// After the output, job_output says what reads could not give (a dead
// executor's output its spill files did not hold), where the job is, and
// that more is left.
func TestJobOutputEndCarriesTheReadsNotes(t *testing.T) {
	info := host.JobInfo{ID: "job-1", State: host.JobKilled, Unread: true,
		Exit: pluginapi.ProcessExit{Killed: true, KillReason: host.ErrPluginDied.Error()}}
	note := "stderr past byte 3000 could not be recovered: its spill file /s/err is missing"
	got := jobOutputEnd(false, [2]string{"/s/out", "/s/err"}, []string{note}, info)
	want := "\n[" + note + "]\n[job job-1: killed: " + host.ErrPluginDied.Error() + "]\n[more output: call job_output again]"
	if got != want {
		t.Errorf("jobOutputEnd = %q\nwant %q", got, want)
	}
}
