package localexec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// spillExecutor returns an executor configured with settings (JSON, may be
// empty) whose private spill directory goes under a fresh TMPDIR, returned
// too. The executor is closed, and its spill directory removed, at cleanup.
func spillExecutor(t *testing.T, settings string) (*Executor, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := newTestExecutor()
	if settings != "" {
		if err := e.Configure(context.Background(), []byte(settings)); err != nil {
			t.Fatalf("Configure(%s): %v", settings, err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := e.removeSpillDir(); err != nil {
			t.Errorf("removeSpillDir: %v", err)
		}
	})
	return e, tmp
}

// runCmd resolves req and runs it, failing the test on an error.
func runCmd(t *testing.T, e *Executor, req pluginapi.ExecRequest) pluginapi.RunResult {
	t.Helper()
	ctx := context.Background()
	spec, err := e.Resolve(ctx, req)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Command, err)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("Run(%q): exit %v %s, stderr %q", req.Command, res.ExitCode, res.Signal, res.Stderr.Text)
	}
	return res
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

func fileSum(t *testing.T, path string) [sha256.Size]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func requireMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %04o, want %04o", path, got, want)
	}
}

func TestSpillUnderCapTouchesNoDisk(t *testing.T) {
	e, tmp := spillExecutor(t, "")
	for _, cmd := range []string{
		"echo hello; echo oops >&2",
		"head -c 30000 /dev/zero; head -c 30000 /dev/zero >&2", // exactly the default cap
		"true",
	} {
		res := runCmd(t, e, pluginapi.ExecRequest{Command: cmd})
		for _, out := range []pluginapi.CollectedOutput{res.Stdout, res.Stderr} {
			if out.Truncated || out.SpillPath != "" || out.SpillTruncated {
				t.Errorf("%q: %+v, want neither truncated nor spilled", cmd, out)
			}
		}
	}
	if names := entries(t, tmp); len(names) != 0 {
		t.Errorf("output under the cap left %v in TMPDIR", names)
	}
}

func TestSpillOverCapKeepsTheWholeStream(t *testing.T) {
	e, tmp := spillExecutor(t, "")
	copies := t.TempDir()
	out, errOut := filepath.Join(copies, "out"), filepath.Join(copies, "err")
	cmd := "head -c 5000000 /dev/urandom | tee " + out + "; head -c 70001 /dev/urandom | tee " + errOut + " >&2"
	res := runCmd(t, e, pluginapi.ExecRequest{Command: cmd, StdoutMaxBytes: 1000, StderrMaxBytes: 70000})

	for _, c := range []struct {
		name  string
		got   pluginapi.CollectedOutput
		copy  string
		cap   int
		total int64
	}{
		{"stdout", res.Stdout, out, 1000, 5000000},
		{"stderr", res.Stderr, errOut, 70000, 70001},
	} {
		got := c.got
		if !got.Truncated || got.TotalBytes != c.total || len(got.Text) > c.cap || got.SpillTruncated {
			t.Errorf("%s: truncated %v, total %d, text %d bytes, spill truncated %v; want true, %d, ≤ %d, false",
				c.name, got.Truncated, got.TotalBytes, len(got.Text), got.SpillTruncated, c.total, c.cap)
		}
		if got.SpillPath == "" {
			t.Fatalf("%s: no spill path", c.name)
		}
		if fileSum(t, got.SpillPath) != fileSum(t, c.copy) {
			t.Errorf("%s: the spill file %s differs from the stream", c.name, got.SpillPath)
		}
		if !strings.HasSuffix(got.SpillPath, "."+c.name) {
			t.Errorf("%s: spill file %s is not named for its stream", c.name, got.SpillPath)
		}
		requireMode(t, got.SpillPath, 0o600)
	}
	dir := filepath.Dir(res.Stdout.SpillPath)
	if filepath.Dir(res.Stderr.SpillPath) != dir {
		t.Errorf("stdout and stderr spilled to different directories: %s, %s", res.Stdout.SpillPath, res.Stderr.SpillPath)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "dsh-spill-") {
		t.Errorf("spill directory %s is not a private one under TMPDIR %s", dir, tmp)
	}
	requireMode(t, dir, 0o700)

	// The next run spills to the same directory, to files of its own.
	res2 := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 2000 /dev/zero", StdoutMaxBytes: 1000})
	if filepath.Dir(res2.Stdout.SpillPath) != dir || res2.Stdout.SpillPath == res.Stdout.SpillPath {
		t.Errorf("second run spilled to %s; first to %s", res2.Stdout.SpillPath, res.Stdout.SpillPath)
	}
	if b, _ := os.ReadFile(res2.Stdout.SpillPath); !bytes.Equal(b, make([]byte, 2000)) {
		t.Errorf("second spill holds %d bytes, want 2000 zeros", len(b))
	}

	if err := e.removeSpillDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("spill directory %s still there after removeSpillDir: %v", dir, err)
	}
	if err := e.removeSpillDir(); err != nil {
		t.Errorf("a second removeSpillDir: %v", err)
	}
	// Nothing spills once the directory went, and the run still settles.
	res3 := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 2000 /dev/zero", StdoutMaxBytes: 1000})
	if res3.Stdout.SpillPath != "" || !res3.Stdout.SpillTruncated || res3.Stdout.TotalBytes != 2000 {
		t.Errorf("after removeSpillDir: %+v, want no spill file, spill truncated, 2000 bytes", res3.Stdout)
	}
	if names := entries(t, tmp); len(names) != 0 {
		t.Errorf("TMPDIR holds %v after removeSpillDir", names)
	}
}

// The first write past the cap spills what came before it too, however the
// stream is split.
func TestCollectorSpillsTheWholeStream(t *testing.T) {
	dir := t.TempDir()
	data := []byte(asciiStream(5000))
	for i, tc := range []struct {
		cap    int64
		n      int
		chunks []int
	}{
		{100, 101, nil}, {100, 101, []int{100, 1}}, {100, 5000, []int{1}}, {100, 5000, []int{99, 2, 300}},
		{10, 11, nil}, {10, 5000, []int{3}}, {1000, 1000, nil}, {1000, 1001, []int{1000}}, {64, 4000, []int{64}},
	} {
		c := newCollector(tc.cap)
		name := "c" + strconv.Itoa(i)
		c.spill = newSpillWriter(func() (*os.File, error) { return createExclusive(dir, name) }, 1<<30)
		p := data[:tc.n]
		for j := 0; len(p) > 0; j++ {
			k := len(p)
			if len(tc.chunks) > 0 {
				k = min(k, tc.chunks[j%len(tc.chunks)])
			}
			_, _ = c.Write(p[:k])
			p = p[k:]
		}
		got := c.output()
		want := collect(tc.cap, string(data[:tc.n]))
		if got.Text != want.Text || got.TotalBytes != want.TotalBytes || got.Truncated != want.Truncated {
			t.Errorf("%+v: spilling changed the text: %+v, want %+v", tc, got, want)
		}
		if int64(tc.n) <= tc.cap {
			if got.SpillPath != "" {
				t.Errorf("%+v: spilled under the cap", tc)
			}
			continue
		}
		b, err := os.ReadFile(got.SpillPath)
		if err != nil || !bytes.Equal(b, data[:tc.n]) || got.SpillTruncated {
			t.Errorf("%+v: spill holds %d bytes (%v), truncated %v; want the %d bytes of the stream", tc, len(b), err, got.SpillTruncated, tc.n)
		}
	}
}

func TestSpillCap(t *testing.T) {
	e, _ := spillExecutor(t, `{"spillCapBytes": 1000}`)
	copyPath := filepath.Join(t.TempDir(), "copy")
	res := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 5000 /dev/urandom | tee " + copyPath, StdoutMaxBytes: 100})
	got := res.Stdout
	if got.TotalBytes != 5000 || !got.Truncated || !got.SpillTruncated || got.SpillPath == "" {
		t.Fatalf("stdout %+v, want 5000 bytes, truncated, spilled and spill truncated", got)
	}
	stream, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	spilled, err := os.ReadFile(got.SpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(spilled, stream[:1000]) {
		t.Errorf("spill file holds %d bytes, want exactly the first 1000 of the stream", len(spilled))
	}

	// A spill cap below what the collector buffered before spilling.
	res = runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 5000 /dev/urandom | tee " + copyPath, StdoutMaxBytes: 2000})
	stream, _ = os.ReadFile(copyPath)
	spilled, _ = os.ReadFile(res.Stdout.SpillPath)
	if !bytes.Equal(spilled, stream[:1000]) || !res.Stdout.SpillTruncated {
		t.Errorf("spill file holds %d bytes (truncated %v), want the first 1000", len(spilled), res.Stdout.SpillTruncated)
	}

	// Exactly the spill cap is not truncated.
	res = runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 1000 /dev/zero", StdoutMaxBytes: 100})
	if fi, err := os.Stat(res.Stdout.SpillPath); err != nil || fi.Size() != 1000 || res.Stdout.SpillTruncated {
		t.Errorf("a stream of exactly the spill cap: %+v, %v", res.Stdout, err)
	}
}

func TestSpillDirSetting(t *testing.T) {
	dir := t.TempDir()
	e, tmp := spillExecutor(t, `{"spillDir": "`+dir+`"}`)
	res := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 3000 /dev/zero >&2", StderrMaxBytes: 1000})
	p := res.Stderr.SpillPath
	if filepath.Dir(p) != dir {
		t.Fatalf("spilled to %q, want a file directly in %s", p, dir)
	}
	if want := "dsh-" + strconv.Itoa(os.Getpid()) + "-run-"; !strings.HasPrefix(filepath.Base(p), want) || !strings.HasSuffix(p, ".stderr") {
		t.Errorf("spill file %s is not named %s<n>.stderr", p, want)
	}
	requireMode(t, p, 0o600)
	if names := entries(t, tmp); len(names) != 0 {
		t.Errorf("a configured spillDir, yet TMPDIR holds %v", names)
	}
	if err := e.removeSpillDir(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Errorf("removeSpillDir removed a file in the caller's directory: %v", err)
	}
}

// In a configured spillDir, ReadSpill reads the spill files (dsh-*) and
// nothing else of the caller's: another file there is refused.
func TestReadSpillInAConfiguredSpillDir(t *testing.T) {
	dir := t.TempDir()
	e, _ := spillExecutor(t, `{"spillDir": "`+dir+`"}`)
	res := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 3000 /dev/zero | tr '\\0' s", StdoutMaxBytes: 1000})
	chunk, err := e.ReadSpill(t.Context(), res.Stdout.SpillPath, 0, 10)
	if err != nil || string(chunk.Data) != "ssssssssss" || chunk.Size != 3000 {
		t.Errorf("ReadSpill(the run's spill file in the spillDir) = %q (size %d), %v", chunk.Data, chunk.Size, err)
	}
	other := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(other, []byte("the caller's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if chunk, err := e.ReadSpill(t.Context(), other, 0, 10); !errors.Is(err, pluginapi.ErrNotASpill) {
		t.Errorf("ReadSpill(%s, not dsh-*) = %q, %v; want ErrNotASpill", other, chunk.Data, err)
	}
}

// A spill that cannot be made or written leaves the run's facts intact.
func TestSpillFailureDoesNotFailTheRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spill")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e, _ := spillExecutor(t, `{"spillDir": "`+dir+`"}`)
	// Even root cannot make files under a regular file.
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spec, err := e.Resolve(ctx, pluginapi.ExecRequest{Command: "seq 1 100000; exit 3", StdoutMaxBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("Run failed with the spill: %v", err)
	}
	if res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("exit %v, want 3", res.ExitCode)
	}
	got := res.Stdout
	if !got.Truncated || !got.SpillTruncated || got.SpillPath != "" || got.TotalBytes != 588895 {
		t.Errorf("stdout %+v, want truncated, spill truncated, no spill path, 588895 bytes", got)
	}
	if !strings.Contains(got.SpillError, dir) {
		t.Errorf("spill error %q does not say what failed (%s)", got.SpillError, dir)
	}
	if !strings.HasPrefix(got.Text, "1\n2\n3\n") || !strings.HasSuffix(got.Text, "99999\n100000\n") {
		t.Errorf("text %q lost its head or tail", got.Text)
	}

	// A background process still runs, without spill paths.
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Reads of at most stdoutMaxBytes each; the last one ends the output.
	var last pluginapi.OutputRead
	for r, _ := p.ReadOutput(ctx); r.Delta != ""; r, _ = p.ReadOutput(ctx) {
		if r.StdoutSpillPath != "" {
			t.Errorf("a read names the spill path %q", r.StdoutSpillPath)
		}
		last = r
	}
	if !strings.HasSuffix(last.Delta, "100000\n") {
		t.Errorf("the last read ends %q…", last.Delta[max(0, len(last.Delta)-20):])
	}
}

// A write that fails (a full disk) stops the spill; the text is kept.
func TestSpillWriteFailure(t *testing.T) {
	c := newCollector(100)
	var full *os.File
	c.spill = newSpillWriter(func() (f *os.File, err error) {
		full, err = os.OpenFile("/dev/full", os.O_WRONLY, 0)
		return full, err
	}, 1<<30)
	data := asciiStream(10000)
	for i := 0; i < len(data); i += 512 {
		_, _ = c.Write([]byte(data[i:min(len(data), i+512)]))
	}
	// A spill that failed holds no descriptor for the rest of the run.
	if full == nil {
		t.Fatal("/dev/full could not be opened: this test needs it")
	}
	if _, err := full.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("the spill file is still open after its write failed (Stat: %v)", err)
	}
	got := c.output()
	if !got.SpillTruncated || got.TotalBytes != 10000 || got.Text != collect(100, data).Text {
		t.Errorf("%+v: want spill truncated, 10000 bytes, the usual text", got)
	}
	if !strings.Contains(got.SpillError, syscall.ENOSPC.Error()) {
		t.Errorf("spill error %q, want ENOSPC's", got.SpillError)
	}
}

// A private spill directory removed by someone else is made again.
func TestSpillDirRemovedUnderUs(t *testing.T) {
	e, _ := spillExecutor(t, "")
	req := pluginapi.ExecRequest{Command: "head -c 2000 /dev/zero", StdoutMaxBytes: 1000}
	first := runCmd(t, e, req).Stdout.SpillPath
	if err := os.RemoveAll(filepath.Dir(first)); err != nil {
		t.Fatal(err)
	}
	second := runCmd(t, e, req).Stdout
	if second.SpillPath == "" || second.SpillTruncated {
		t.Fatalf("after the directory went: %+v", second)
	}
	requireMode(t, filepath.Dir(second.SpillPath), 0o700)

	other, _ := spillExecutor(t, "")
	if p := runCmd(t, other, req).Stdout.SpillPath; filepath.Dir(p) == filepath.Dir(second.SpillPath) {
		t.Errorf("two executors share the spill directory %s", filepath.Dir(p))
	}
}

// startCmd resolves req and starts it.
func startCmd(t *testing.T, e *Executor, req pluginapi.ExecRequest) pluginapi.ShellProcess {
	t.Helper()
	ctx := context.Background()
	spec, err := e.Resolve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBackgroundSpillsFromTheFirstByte(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()

	quiet := startCmd(t, e, pluginapi.ExecRequest{Command: "true"})
	if _, err := quiet.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := quiet.ReadOutput(ctx)
	for _, path := range []string{r.StdoutSpillPath, r.StderrSpillPath} {
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Errorf("a silent process's spill file %q: %v, want an empty file", path, err)
		}
	}

	p := startCmd(t, e, pluginapi.ExecRequest{Command: "echo out; echo err >&2"})
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ = p.ReadOutput(ctx)
	if want := "out\n" + pluginapi.StderrSectionHeader + "err\n"; r.Delta != want || r.Lossy {
		t.Errorf("read %+v, want %q", r, want)
	}
	for path, want := range map[string]string{r.StdoutSpillPath: "out\n", r.StderrSpillPath: "err\n"} {
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Errorf("spill file %q holds %q (%v), want %q", path, b, err, want)
		}
		requireMode(t, path, 0o600)
	}
	if !strings.HasSuffix(r.StdoutSpillPath, "bg-"+p.ID()+".stdout") || !strings.HasSuffix(r.StderrSpillPath, ".stderr") {
		t.Errorf("spill files %s, %s are not named for the process", r.StdoutSpillPath, r.StderrSpillPath)
	}
	requireMode(t, filepath.Dir(r.StdoutSpillPath), 0o700)
	// The paths come with every read.
	if again, _ := p.ReadOutput(ctx); again.Delta != "" || again.StdoutSpillPath != r.StdoutSpillPath {
		t.Errorf("a second read %+v", again)
	}
}

// Read often, the deltas are the stream, each byte once, and so is the
// spill file.
func TestBackgroundDeltasConcatenate(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	copyPath := filepath.Join(t.TempDir(), "copy")
	cmd := "for i in $(seq 0 39); do seq $((i*1000)) $((i*1000+999)); printf 'é日本🙂'; sleep 0.01; done | tee " + copyPath
	p := startCmd(t, e, pluginapi.ExecRequest{Command: cmd})
	var all strings.Builder
	var reads int
	finished := false
	for !finished {
		select {
		case <-p.(*process).done:
			finished = true
		default:
		}
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Lossy {
			t.Fatal("a read was lossy")
		}
		if r.Delta != "" {
			reads++
		}
		all.WriteString(r.Delta)
		time.Sleep(3 * time.Millisecond)
	}
	stream, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if all.String() != string(stream) {
		t.Errorf("the %d deltas join to %d bytes; the stream is %d", reads, all.Len(), len(stream))
	}
	if reads < 5 {
		t.Errorf("only %d reads had output; expected it incrementally", reads)
	}
	r, _ := p.ReadOutput(ctx)
	if fileSum(t, r.StdoutSpillPath) != sha256.Sum256(stream) {
		t.Errorf("the stdout spill file differs from the stream")
	}
}

func TestBackgroundLossy(t *testing.T) {
	e, _ := spillExecutor(t, `{"backgroundBufferBytes": 1000}`)
	ctx := context.Background()
	copyPath := filepath.Join(t.TempDir(), "copy")
	p := startCmd(t, e, pluginapi.ExecRequest{Command: "seq 1 20000 | tee " + copyPath + "; echo err >&2"})
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	stream, _ := os.ReadFile(copyPath)
	r, _ := p.ReadOutput(ctx)
	if !r.Lossy {
		t.Error("a read after the buffer overflowed is not lossy")
	}
	out, _, _ := strings.Cut(r.Delta, pluginapi.StderrSectionHeader)
	if len(out) != 1000 || !strings.HasSuffix(string(stream), out) {
		t.Errorf("delta's stdout is %d bytes %q…, want the last 1000 of the stream", len(out), out[:min(20, len(out))])
	}
	if !strings.HasSuffix(r.Delta, pluginapi.StderrSectionHeader+"err\n") {
		t.Errorf("delta %q… lacks the stderr section", r.Delta[max(0, len(r.Delta)-30):])
	}
	if fileSum(t, r.StdoutSpillPath) != sha256.Sum256(stream) {
		t.Error("the spill file is not the full stream")
	}
	if again, _ := p.ReadOutput(ctx); again.Lossy || again.Delta != "" {
		t.Errorf("the read after a lossy one: %+v", again)
	}
}

// A process that writes as fast as it can keeps reads quick and memory
// flat, and its spill file stops at the cap.
func TestBackgroundFloodStaysBounded(t *testing.T) {
	const spillCap = 50 << 20
	e, _ := spillExecutor(t, `{"spillCapBytes": `+strconv.Itoa(spillCap)+`, "backgroundBufferBytes": 65536}`)
	ctx := context.Background()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := startCmd(t, e, pluginapi.ExecRequest{Command: "yes"})
	var slowest time.Duration
	var lossy bool
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		began := time.Now()
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(began))
		lossy = lossy || r.Lossy
		if len(r.Delta) > 65536 {
			t.Fatalf("a delta of %d bytes from a 65536-byte buffer", len(r.Delta))
		}
		if r.Delta != "" && strings.Trim(r.Delta, "y\n") != "" {
			t.Fatalf("delta is not yes's output: %q", r.Delta[:min(40, len(r.Delta))])
		}
		time.Sleep(10 * time.Millisecond)
	}
	if slowest > 500*time.Millisecond {
		t.Errorf("the slowest read took %s", slowest)
	}
	if !lossy {
		t.Error("yes never overflowed a 64 KiB buffer read every 10 ms")
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapInuse) - int64(before.HeapInuse); grown > 16<<20 {
		t.Errorf("the heap grew by %d bytes while yes ran", grown)
	}
	if _, err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := p.ReadOutput(ctx)
	fi, err := os.Stat(r.StdoutSpillPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > spillCap {
		t.Errorf("spill file is %d bytes, over its cap %d", fi.Size(), spillCap)
	}
	t.Logf("spill file %d bytes, slowest read %s", fi.Size(), slowest)
}

// The unread buffer against a model: the stream minus what was read,
// keeping at most max bytes, lossy exactly when it dropped some.
func TestUnreadBufferModel(t *testing.T) {
	data := []byte(asciiStream(200000))
	for _, max := range []int{1, 7, 100, 4096, 5000, 10000} {
		b := newUnreadBuffer(int64(max))
		pos, oldest, dropped := 0, 0, false // written; oldest unread; dropped since the last take
		for step := 1; pos < len(data); step++ {
			n := min(len(data)-pos, (step*7919)%(3*max+5)+1)
			_, _ = b.Write(data[pos : pos+n])
			pos += n
			if pos-oldest > max {
				oldest, dropped = pos-max, true
			}
			if step%3 != 0 && step%5 != 0 {
				continue
			}
			limit := []int{1 << 30, max/2 + 1, 3}[step%3]
			got, lost, end := b.take(limit)
			want := data[oldest:min(pos, oldest+limit)]
			if !bytes.Equal(got, want) || lost != dropped {
				t.Fatalf("max %d, step %d: took %d bytes, lost %v; want %d, %v", max, step, len(got), lost, len(want), dropped)
			}
			if wantEnd := int64(oldest + len(want)); end != wantEnd {
				t.Fatalf("max %d, step %d: the take ends at %d, want %d", max, step, end, wantEnd)
			}
			oldest += len(want)
			dropped = false
		}
	}
}

func TestUnreadBufferLossy(t *testing.T) {
	b := newUnreadBuffer(10)
	_, _ = b.Write([]byte("0123456789"))
	if got, lost, _ := b.take(100); string(got) != "0123456789" || lost {
		t.Errorf("take %q %v, want all, not lost", got, lost)
	}
	_, _ = b.Write([]byte("abcdefgh"))
	_, _ = b.Write([]byte("ijkl"))
	if got, lost, _ := b.take(4); string(got) != "cdef" || !lost {
		t.Errorf("take %q %v, want cdef, lost", got, lost)
	}
	if got, lost, _ := b.take(100); string(got) != "ghijkl" || lost {
		t.Errorf("take %q %v, want ghijkl, not lost", got, lost)
	}
	_, _ = b.Write([]byte("0123456789ABCDEF"))
	if got, lost, _ := b.take(100); string(got) != "6789ABCDEF" || !lost {
		t.Errorf("take %q %v, want the last 10, lost", got, lost)
	}
	if got, lost, _ := b.take(100); len(got) != 0 || lost {
		t.Errorf("take %q %v, want nothing", got, lost)
	}
}

// A read never ends inside a UTF-8 character while more may come: the
// bytes of one cut short (by the writer, or by the read's limit) wait for
// the read that can give it whole; once the stream has ended they are
// given as they are.
func TestUnreadBufferKeepsCharactersWhole(t *testing.T) {
	b := newUnreadBuffer(1 << 10)
	_, _ = b.Write([]byte("caf\xc3"))
	if got, _, _ := b.take(100); string(got) != "caf" {
		t.Errorf("first read %q, want %q (the é's first byte waits)", got, "caf")
	}
	if got, _, _ := b.take(100); len(got) != 0 {
		t.Errorf("a read of half a character gave %q", got)
	}
	_, _ = b.Write([]byte("\xa9 \xe6\x97\xa5"))
	if got, _, _ := b.take(4); string(got) != "é " {
		t.Errorf("a read limited to 4 bytes gave %q, want %q (日 does not fit whole)", got, "é ")
	}
	if got, _, _ := b.take(100); string(got) != "日" {
		t.Errorf("then %q, want %q", got, "日")
	}
	_, _ = b.Write([]byte("\xff\xfe")) // not UTF-8: nothing to wait for
	if got, _, _ := b.take(100); string(got) != "\xff\xfe" {
		t.Errorf("bytes that are not UTF-8 read as %q", got)
	}
	_, _ = b.Write([]byte("end\xf0\x9f"))
	if got, _, _ := b.take(100); string(got) != "end" {
		t.Errorf("read %q before the end, want %q", got, "end")
	}
	b.end()
	if got, _, _ := b.take(100); string(got) != "\xf0\x9f" {
		t.Errorf("after the end, the cut character reads %q, want its two bytes", got)
	}
}

// Through a real process: a character written in two halves, a second
// apart, is read whole.
func TestBackgroundReadKeepsCharactersWhole(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	p := startCmd(t, e, pluginapi.ExecRequest{Command: `printf 'caf\xc3'; sleep 1; printf '\xa9\n'`})
	var first pluginapi.OutputRead
	for began := time.Now(); first.Delta == ""; time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatal("no output within 5s")
		}
		first, _ = p.ReadOutput(ctx)
	}
	if first.Delta != "caf" {
		t.Errorf("the read mid-character gave %q, want %q", first.Delta, "caf")
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if rest, _ := p.ReadOutput(ctx); rest.Delta != "é\n" {
		t.Errorf("the read after gave %q, want %q", rest.Delta, "é\n")
	}
}

// One read takes at most the spec's stdoutMaxBytes and stderrMaxBytes, as a
// foreground result would show; the rest waits for the next reads, each
// stream in its own section, and all of it comes, in order. (Lines of 10
// bytes, a cap of 1,000: no read cuts a line, so the reads join exactly.)
func TestBackgroundReadIsCappedLikeAResult(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	const capBytes, lines = 1000, 500
	p := startCmd(t, e, pluginapi.ExecRequest{
		Command:        `for i in $(seq 1 500); do printf 'out %05d\n' $i; printf 'err %05d\n' $i >&2; done`,
		StdoutMaxBytes: capBytes, StderrMaxBytes: capBytes,
	})
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var out, errOut strings.Builder
	reads := 0
	for {
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Delta == "" {
			break
		}
		reads++
		o, e, _ := strings.Cut(r.Delta, pluginapi.StderrSectionHeader)
		if len(o) > capBytes || len(e) > capBytes {
			t.Fatalf("read %d: %d bytes of stdout and %d of stderr, past the cap of %d", reads, len(o), len(e), capBytes)
		}
		if strings.Contains(o, "err ") || strings.Contains(e, "out ") || strings.Contains(e, pluginapi.StderrSectionHeader) {
			t.Fatalf("read %d mixes the streams: %q", reads, r.Delta)
		}
		out.WriteString(o)
		errOut.WriteString(e)
	}
	var wantOut, wantErr strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&wantOut, "out %05d\n", i)
		fmt.Fprintf(&wantErr, "err %05d\n", i)
	}
	if out.String() != wantOut.String() || errOut.String() != wantErr.String() {
		t.Errorf("the reads together differ from what was written (%d reads)\nstdout %.200q\nstderr %.200q", reads, out.String(), errOut.String())
	}
	if want := wantOut.Len() / capBytes; reads != want {
		t.Errorf("%d reads, want %d (%d bytes a stream, at most %d a read)", reads, want, wantOut.Len(), capBytes)
	}
}

// Each read says where in each stream its text ends, exactly, whatever cut
// it (the read's cap, a UTF-8 character kept whole, the newline put before
// the [stderr] header): the ends count the bytes given so far, each
// stream's text is the spill file's bytes between the previous end and
// this one, and the last ends are the files' sizes. The spill files are
// named from the start, before any read.
func TestBackgroundReadEndsAreExact(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	const capBytes = 999 // odd: two-byte é cannot fill a read exactly
	p := startCmd(t, e, pluginapi.ExecRequest{
		// No newline at the end of stdout: each read that has stderr too
		// puts one before the header.
		Command:        `for i in $(seq 1 2000); do printf é; done; for i in $(seq 1 1500); do printf 'x日' >&2; done`,
		StdoutMaxBytes: capBytes, StderrMaxBytes: capBytes,
	})
	sn, ok := p.(pluginapi.SpillNamer)
	if !ok {
		t.Fatal("a background process does not name its spill files")
	}
	outPath, errPath := sn.SpillPaths()
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	files := [2][]byte{}
	for i, path := range []string{outPath, errPath} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("spill file named at start: %v", err)
		}
		files[i] = b
	}
	if len(files[0]) != 4000 || len(files[1]) != 6000 {
		t.Fatalf("spill files hold %d and %d bytes, want 4000 and 6000", len(files[0]), len(files[1]))
	}
	var at [2]int64
	for reads := 1; ; reads++ {
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.StdoutSpillPath != outPath || r.StderrSpillPath != errPath {
			t.Fatalf("read %d names %s and %s; Start named %s and %s", reads, r.StdoutSpillPath, r.StderrSpillPath, outPath, errPath)
		}
		if r.Ends == nil {
			t.Fatalf("read %d does not say where it ends", reads)
		}
		ends := [2]int64{r.Ends.Stdout, r.Ends.Stderr}
		if r.Delta == "" {
			if ends != at {
				t.Fatalf("an empty read ends at %v, after reads that ended at %v", ends, at)
			}
			break
		}
		o, errText, hasErr := strings.Cut(r.Delta, pluginapi.StderrSectionHeader)
		if hasErr && o != "" && !strings.HasSuffix(string(files[0][at[0]:ends[0]]), "\n") {
			o = strings.TrimSuffix(o, "\n") // the newline before the header
		}
		for i, text := range []string{o, errText} {
			if ends[i] < at[i] || ends[i] > int64(len(files[i])) {
				t.Fatalf("read %d: stream %d ends at %d, after %d, in a file of %d bytes", reads, i, ends[i], at[i], len(files[i]))
			}
			if want := string(files[i][at[i]:ends[i]]); text != want {
				t.Fatalf("read %d: stream %d gave %d bytes, but its end moved from %d to %d", reads, i, len(text), at[i], ends[i])
			}
			if len(text) > capBytes {
				t.Fatalf("read %d: %d bytes of stream %d, past the cap", reads, len(text), i)
			}
		}
		at = ends
	}
	if at != [2]int64{4000, 6000} {
		t.Errorf("the reads end at %v, want the whole streams (4000, 6000)", at)
	}
}

// A cap below one character's length still lets every character through
// while the stream is open: a read takes at least a whole character.
func TestBackgroundReadCappedBelowACharacter(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	p := startCmd(t, e, pluginapi.ExecRequest{Command: `printf '日本'; sleep 30`, StdoutMaxBytes: 1})
	defer func() { _, _ = p.Kill(ctx) }()
	var got strings.Builder
	for began := time.Now(); got.String() != "日本"; time.Sleep(20 * time.Millisecond) {
		if time.Since(began) > 5*time.Second {
			t.Fatalf("after 5s the reads gave %q of %q, the stream still open", got.String(), "日本")
		}
		r, err := p.ReadOutput(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(r.Delta)
	}
	if _, err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// A run's spill files are closed once its streams end: this process holds
// no descriptor of them after the run.
func TestSpillFilesAreClosedAfterTheRun(t *testing.T) {
	e, _ := spillExecutor(t, "")
	res := runCmd(t, e, pluginapi.ExecRequest{Command: "head -c 100000 /dev/zero; head -c 100000 /dev/zero >&2", StdoutMaxBytes: 100, StderrMaxBytes: 100})
	for _, path := range []string{res.Stdout.SpillPath, res.Stderr.SpillPath} {
		if path == "" {
			t.Fatalf("no spill file: %+v", res)
		}
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			if runtime.GOOS == "linux" {
				t.Fatal(err)
			}
			t.Skipf("no /proc/self/fd on %s to list this process's descriptors", runtime.GOOS)
		}
		for _, fd := range fds {
			if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == path {
				t.Errorf("descriptor %s still holds the spill file %s after the run", fd.Name(), path)
			}
		}
	}
}

// A taken spill file name is never reused: createExclusive tries name-2,
// name-3, … up to name-100 (a hundred names), and past that says why it
// made none. The files
// it found in its way are left as they were.
func TestCreateExclusiveTriesOtherNamesThenGivesUp(t *testing.T) {
	dir := t.TempDir()
	take := func(name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte("taken"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	create := func(want string) {
		t.Helper()
		f, err := createExclusive(dir, "s")
		if err != nil {
			t.Fatalf("with the names before %s taken: %v", want, err)
		}
		defer f.Close()
		if got := filepath.Base(f.Name()); got != want {
			t.Errorf("made %s, want %s", got, want)
		}
	}
	take("s")
	create("s-2")
	for i := 3; i <= 99; i++ {
		take("s-" + strconv.Itoa(i))
	}
	create("s-100")
	if f, err := createExclusive(dir, "s"); !errors.Is(err, fs.ErrExist) {
		if f != nil {
			f.Close()
		}
		t.Errorf("with s to s-100 taken: made %v, err %v; want an error that the names exist", f, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 100 {
		t.Errorf("%d files in the directory, want 100 (s, s-2 … s-100)", len(entries))
	}
	for _, de := range entries {
		if data, err := os.ReadFile(filepath.Join(dir, de.Name())); err != nil || (de.Name() != "s-2" && de.Name() != "s-100" && string(data) != "taken") {
			t.Errorf("%s was overwritten: %q, %v", de.Name(), data, err)
		}
	}
}

// A read of stdout alone costs the one copy out of the unread buffer: that
// copy is the read's text, not copied again (a busy stream gives a
// megabyte a read, read after read).
func TestBackgroundReadOfStdoutCopiesItOnce(t *testing.T) {
	e, _ := spillExecutor(t, "")
	ctx := context.Background()
	const size = 512 << 10
	p := startCmd(t, e, pluginapi.ExecRequest{
		Command:        fmt.Sprintf("head -c %d /dev/zero | tr '\\0' y", size),
		StdoutMaxBytes: size,
	})
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := p.ReadOutput(ctx)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Delta) != size || strings.Trim(r.Delta, "y") != "" {
		t.Fatalf("read %d bytes (%.20q...), want %d of y", len(r.Delta), r.Delta, size)
	}
	if copies := float64(after.TotalAlloc-before.TotalAlloc) / size; copies > 1.5 {
		t.Errorf("a read of %d bytes of stdout allocated %.2f times that: the text was copied again", size, copies)
	}
}
