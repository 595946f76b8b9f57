package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// Lines of exactly 20 bytes, with two- and three-byte characters: reads
// capped at 1,000 bytes cut between lines, so a read's stdout never needs
// the newline an executor puts before the [stderr] header.
const (
	recoverCap     = 1000
	recoverOutLine = `o %05d é日 xxxxx\n`
	recoverErrLine = `e %05d 日é yyyyy\n`
)

func recoverLines(format string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, strings.ReplaceAll(format, `\n`, "\n"), i)
	}
	return b.String()
}

// crashedJob starts a job on a runtime whose spill directory is spillDir:
// it writes lines 1 to 150 of each stream; when readFirst is set, the test
// reads them all through Jobs().Output; the job then writes lines 151 to
// 600, and the plugin is SIGKILLed while the job still runs, nothing of the
// second part read; afterKill, when not nil, runs right after the SIGKILL.
// It returns once the job has settled, its process and the old plugin gone.
func crashedJob(t *testing.T, readFirst bool, afterKill func(*host.Runtime, host.JobID)) (r *host.Runtime, id host.JobID, spillDir string) {
	t.Helper()
	return crashedJobCapped(t, recoverCap, readFirst, afterKill)
}

// crashedJobCapped is crashedJob with the job's reads capped at readCap
// bytes a stream (readFirst needs recoverCap).
func crashedJobCapped(t *testing.T, readCap int64, readFirst bool, afterKill func(*host.Runtime, host.JobID)) (r *host.Runtime, id host.JobID, spillDir string) {
	t.Helper()
	spillDir, work := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options: host.Options{Executor: host.Executor{Name: "bash-local", Path: pluginBin}, SpillDir: spillDir},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close(context.Background()) })
	_, pluginPID := r.Generation()
	script := fmt.Sprintf(`echo $$ > pid
for i in $(seq 1 150); do printf '%[1]s' $i; printf '%[2]s' $i >&2; done
while [ ! -e go ]; do sleep 0.02; done
for i in $(seq 151 600); do printf '%[1]s' $i; printf '%[2]s' $i >&2; done
exec sleep 1000`, recoverOutLine, recoverErrLine)
	job, err := r.Jobs().Start(ctx, "alice", pluginapi.ExecRequest{
		Command: script, Workdir: work, StdoutMaxBytes: readCap, StderrMaxBytes: readCap,
	})
	if err != nil {
		t.Fatal(err)
	}
	if readFirst {
		// The first part, read through the executor.
		out, errOut := readJob(t, r, job.ID, 3000, 3000)
		if out != recoverLines(recoverOutLine, 1, 150) || errOut != recoverLines(recoverErrLine, 1, 150) {
			t.Fatalf("the first part read %.100q / %.100q", out, errOut)
		}
	}
	var pidText []byte
	for deadline := time.Now().Add(10 * time.Second); len(pidText) == 0 || pidText[len(pidText)-1] != '\n'; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job wrote no pid file in 10s")
		}
		pidText, _ = os.ReadFile(filepath.Join(work, "pid"))
	}
	jobPID, _ := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err := os.WriteFile(filepath.Join(work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The second part is in the spill files (the plugin has read it from
	// the pipes) before the plugin dies.
	for deadline := time.Now().Add(10 * time.Second); spillSizes(t, spillDir) != [2]int64{12000, 12000}; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("spill files hold %v bytes, want 12000 each", spillSizes(t, spillDir))
		}
	}
	if err := syscall.Kill(pluginPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if afterKill != nil {
		afterKill(r, job.ID)
	}
	done, err := r.Jobs().Wait(ctx, "alice", job.ID)
	if err != nil || done.State != host.JobKilled || done.Exit.KillReason != host.ErrPluginDied.Error() {
		t.Fatalf("the job reads %+v %v, want killed because the plugin died", done, err)
	}
	requireGone(t, jobPID)
	requireGone(t, pluginPID)
	return r, job.ID, spillDir
}

// readJob reads job id through Jobs().Output until it has gathered
// wantOut bytes of stdout and wantErr of stderr, each read within the
// cap, and returns them.
func readJob(t *testing.T, r *host.Runtime, id host.JobID, wantOut, wantErr int) (string, string) {
	t.Helper()
	var out, errOut strings.Builder
	for deadline := time.Now().Add(10 * time.Second); out.Len() < wantOut || errOut.Len() < wantErr; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("read %d and %d bytes in 10s, want %d and %d", out.Len(), errOut.Len(), wantOut, wantErr)
		}
		d, _, err := r.Jobs().Output(context.Background(), "alice", id)
		if err != nil {
			t.Fatal(err)
		}
		o, e, _ := strings.Cut(d.Delta, pluginapi.StderrSectionHeader)
		if len(o) > recoverCap || len(e) > recoverCap {
			t.Fatalf("a read of %d and %d bytes, past the cap of %d", len(o), len(e), recoverCap)
		}
		out.WriteString(o)
		errOut.WriteString(e)
	}
	return out.String(), errOut.String()
}

// spillSizes is the size of the stdout and the stderr spill file in dir.
func spillSizes(t *testing.T, dir string) (sizes [2]int64) {
	t.Helper()
	for i, suffix := range []string{".stdout", ".stderr"} {
		m, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		if len(m) != 1 {
			continue
		}
		if fi, err := os.Stat(m[0]); err == nil {
			sizes[i] = fi.Size()
		}
	}
	return sizes
}

// After the plugin died, what the job wrote and nobody read is read back
// from its spill files, through the usual reads: from exactly where the
// reads had got (nothing repeated, nothing skipped), each within the job's
// cap, stderr in its section, Unread on every read but the last. Nothing
// read before the crash, the spill files named at the job's start hold it
// all.
func TestAJobsUnreadOutputIsRecoveredAfterAPluginCrash(t *testing.T) {
	t.Run("the first part read", func(t *testing.T) { testRecovery(t, true, 151) })
	t.Run("nothing read", func(t *testing.T) { testRecovery(t, false, 1) })
}

func testRecovery(t *testing.T, readFirst bool, fromLine int) {
	r, id, _ := crashedJob(t, readFirst, nil)
	var out, errOut strings.Builder
	reads := 0
	for {
		d, info, err := r.Jobs().Output(context.Background(), "alice", id)
		if err != nil {
			t.Fatal(err)
		}
		if info.Note != "" || d.Lossy {
			t.Errorf("read %d: note %q, lossy %v", reads+1, info.Note, d.Lossy)
		}
		if d.Delta == "" {
			if info.Unread {
				t.Fatal("an empty read says more is unread")
			}
			break
		}
		reads++
		o, e, _ := strings.Cut(d.Delta, pluginapi.StderrSectionHeader)
		if len(o) > recoverCap || len(e) > recoverCap {
			t.Fatalf("read %d: %d and %d bytes, past the cap of %d", reads, len(o), len(e), recoverCap)
		}
		out.WriteString(o)
		errOut.WriteString(e)
		if !info.Unread {
			break
		}
	}
	if want := recoverLines(recoverOutLine, fromLine, 600); out.String() != want {
		t.Errorf("stdout after the crash: %d bytes %.80q…, want %d bytes %.80q…", out.Len(), out.String(), len(want), want)
	}
	if want := recoverLines(recoverErrLine, fromLine, 600); errOut.String() != want {
		t.Errorf("stderr after the crash: %d bytes %.80q…, want %d bytes %.80q…", errOut.Len(), errOut.String(), len(want), want)
	}
	if want := (600 - fromLine + 1) * 20 / recoverCap; reads != want {
		t.Errorf("%d reads, want %d (%d bytes a stream, %d a read)", reads, want, want*recoverCap, recoverCap)
	}
}

// A spill file that is gone, or shorter than where the reads had got,
// does not fail the read: a note says what could not be recovered.
func TestRecoveryNotesMissingAndShortSpillFiles(t *testing.T) {
	r, id, dir := crashedJob(t, true, nil)
	outs, _ := filepath.Glob(filepath.Join(dir, "*.stdout"))
	errs, _ := filepath.Glob(filepath.Join(dir, "*.stderr"))
	if len(outs) != 1 || len(errs) != 1 {
		t.Fatalf("spill files %v %v", outs, errs)
	}
	if err := os.Truncate(outs[0], 100); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(errs[0]); err != nil {
		t.Fatal(err)
	}
	d, info, err := r.Jobs().Output(context.Background(), "alice", id)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"stdout past byte 3000 could not be recovered: its spill file " + outs[0] + " holds only 100 bytes",
		"stderr past byte 3000 could not be recovered: its spill file " + errs[0] + " is missing",
	} {
		if !strings.Contains(info.Note, want) {
			t.Errorf("the note %q does not say %q", info.Note, want)
		}
	}
	if d.Delta != "" || info.Unread {
		t.Errorf("read %q, unread %v; want nothing more", d.Delta, info.Unread)
	}
	if d, info, _ := r.Jobs().Output(context.Background(), "alice", id); d.Delta != "" || info.Note != "" {
		t.Errorf("the next read %q, note %q: the note is given once", d.Delta, info.Note)
	}
}

// A read made while the plugin is dead and its job not yet settled waits
// for the job to settle, and gives the recovered output rather than an
// error.
func TestAReadDuringACrashGivesTheRecoveredOutput(t *testing.T) {
	var d pluginapi.OutputRead
	var info host.JobInfo
	var err error
	crashedJob(t, true, func(r *host.Runtime, id host.JobID) {
		d, info, err = r.Jobs().Output(context.Background(), "alice", id)
	})
	if err != nil {
		t.Fatalf("a read during the crash failed: %v", err)
	}
	if want := recoverLines(recoverOutLine, 151, 200); !strings.HasPrefix(d.Delta, want) || info.State != host.JobKilled {
		t.Errorf("a read during the crash gave %.60q… (job %v), want the recovered output from line 151 on", d.Delta, info.State)
	}
}

// A spill file that ends inside a UTF-8 character (the stream was cut
// there) is recovered to its last byte: the character cut short is held
// back only while the stream goes on, and here it does not.
func TestARecoveredSpillThatEndsInsideACharacterIsReadToItsEnd(t *testing.T) {
	r, id, dir := crashedJob(t, true, nil)
	outs, _ := filepath.Glob(filepath.Join(dir, "*.stdout"))
	if len(outs) != 1 {
		t.Fatalf("spill files %v", outs)
	}
	// Line 600 is "o 00600 é日 xxxxx\n": keep it up to the first byte of 日.
	size := int64(12000 - len(recoverLines(recoverOutLine, 600, 600)) + len("o 00600 é") + 1)
	if err := os.Truncate(outs[0], size); err != nil {
		t.Fatal(err)
	}
	// Stderr has nothing left past what was read: no section follows
	// stdout's last bytes.
	errs, _ := filepath.Glob(filepath.Join(dir, "*.stderr"))
	if len(errs) != 1 {
		t.Fatalf("spill files %v", errs)
	}
	if err := os.Truncate(errs[0], 3000); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for reads := 0; ; reads++ {
		if reads == 100 {
			t.Fatalf("still unread after 100 reads: the cut character is held back for ever (%d bytes read)", out.Len())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		d, info, err := r.Jobs().Output(ctx, "alice", id)
		cancel()
		if err != nil {
			t.Fatalf("read %d: %v (%d bytes read)", reads, err, out.Len())
		}
		o, _, _ := strings.Cut(d.Delta, pluginapi.StderrSectionHeader)
		out.WriteString(o)
		if info.Note != "" {
			// Stderr's spill file ends where the reads did: nothing of it
			// is lost.
			t.Errorf("read %d noted %q; nothing was lost", reads, info.Note)
		}
		if !info.Unread {
			break
		}
	}
	want := recoverLines(recoverOutLine, 151, 600)[:size-3000]
	if out.String() != want {
		t.Errorf("recovered %d bytes ending %q, want %d ending %q", out.Len(), tail(out.String()), len(want), tail(want))
	}
}

// tail is the last few bytes of s, for a message.
func tail(s string) string { return s[max(0, len(s)-12):] }

// Recovered reads capped inside a character never end inside it while the
// stream goes on: here no read had been made, and a cap of 1,009 bytes
// falls on the second byte of an é (lines are 20 bytes long); the bytes
// of the character cut short wait for the next read, and the reads
// together are the stream, whole. (Stderr's spill file is emptied: a
// read's stdout then has no newline put before a stderr section.)
func TestRecoveredReadsNeverSplitACharacter(t *testing.T) {
	const readCap = 1009
	r, id, dir := crashedJobCapped(t, readCap, false, nil)
	errs, _ := filepath.Glob(filepath.Join(dir, "*.stderr"))
	if len(errs) != 1 {
		t.Fatalf("spill files %v", errs)
	}
	if err := os.Truncate(errs[0], 0); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	for reads := 0; ; reads++ {
		if reads == 100 {
			t.Fatalf("still unread after 100 reads (%d and %d bytes read)", out.Len(), errOut.Len())
		}
		d, info, err := r.Jobs().Output(context.Background(), "alice", id)
		if err != nil {
			t.Fatalf("read %d: %v", reads, err)
		}
		o, e, _ := strings.Cut(d.Delta, pluginapi.StderrSectionHeader)
		for name, part := range map[string]string{"stdout": o, "stderr": e} {
			if len(part) > readCap || !utf8.ValidString(part) {
				t.Fatalf("read %d: %d bytes of %s, valid UTF-8 %v; want at most %d, whole characters", reads, len(part), name, utf8.ValidString(part), readCap)
			}
		}
		out.WriteString(o)
		errOut.WriteString(e)
		if !info.Unread {
			break
		}
	}
	if want := recoverLines(recoverOutLine, 1, 600); out.String() != want {
		t.Errorf("recovered %d bytes of stdout ending %q, want %d ending %q", out.Len(), tail(out.String()), len(want), tail(want))
	}
	if errOut.Len() > 0 {
		t.Errorf("recovered %d bytes of stderr from an empty spill file", errOut.Len())
	}
}
