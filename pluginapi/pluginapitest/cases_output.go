package pluginapitest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// countOutput is what Commands.Count(n) prints.
func countOutput(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}

// readSpill reads a spill file through the executor, where its commands
// run (pluginapi.SpillReader), in reads of at most 64 KiB, failing the
// test when it cannot.
func readSpill(e *env, path string) string {
	e.t.Helper()
	if path == "" {
		e.t.Fatal("output past its cap must name the spill file that holds the whole stream (SpillPath)")
	}
	r := spillReader(e)
	var out []byte
	for {
		c, err := r.ReadSpill(e.ctx, path, int64(len(out)), 64<<10)
		if err != nil {
			e.t.Fatalf("the spill file %s must be readable through the executor, where the commands run "+
				"(pluginapi.SpillReader: a host may be on another machine): %v", path, err)
		}
		out = append(out, c.Data...)
		if len(c.Data) == 0 || int64(len(out)) >= c.Size {
			return string(out)
		}
	}
}

// spillReader is the executor as a SpillReader, failing the test when it
// is none.
func spillReader(e *env) pluginapi.SpillReader {
	e.t.Helper()
	r, ok := e.x.(pluginapi.SpillReader)
	if !ok {
		e.t.Fatalf("the executor (%T) must read its spill files for the host (pluginapi.SpillReader)", e.x)
	}
	return r
}

var outputCases = []suiteCase{
	{"output/small output is whole and never spills", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(10)})
		if res.Stdout.Text != countOutput(10) || res.Stdout.Truncated || res.Stdout.SpillPath != "" {
			e.t.Errorf("output under the cap must be collected whole, not Truncated, and never spilled: %+v", res.Stdout)
		}
	}},
	{"output/past the cap: head and tail within it, the full stream spilled", func(e *env) {
		const n, limit = 20000, 1000
		want := countOutput(n)
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(n), StdoutMaxBytes: limit})
		out := res.Stdout
		if !out.Truncated || out.TotalBytes != int64(len(want)) {
			e.t.Errorf("output past the cap must be Truncated, and TotalBytes count the whole stream (%d): truncated %v total %d", len(want), out.Truncated, out.TotalBytes)
		}
		if len(out.Text) > limit {
			e.t.Errorf("the collected text must fit the cap: %d bytes over a %d-byte cap", len(out.Text), limit)
		}
		if !strings.HasPrefix(out.Text, "1\n2\n3\n") || !strings.HasSuffix(out.Text, "19999\n20000\n") {
			e.t.Errorf("the collected text past the cap must keep the head and the tail: %q", out.Text)
		}
		if got := readSpill(e, out.SpillPath); got != want {
			e.t.Errorf("the spill file must hold the whole stream byte for byte: it holds %d bytes that differ from the %d-byte stream", len(got), len(want))
		}
		if fi, err := os.Stat(out.SpillPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
			e.t.Errorf("spill files must be private to their owner (0600 in a 0700 directory); mode %v", fi.Mode().Perm())
		}
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Fatalf("Close must terminate what the executor runs and return no error: %v", err)
		}
		// An executor as the suite made it spills into a directory of its
		// own; a remote one's host may have given it one of the host's.
		if _, err := os.Stat(out.SpillPath); e.impl != nil && !os.IsNotExist(err) {
			e.t.Errorf("Close must remove the spill files of a spill directory the executor made: %v", err)
		}
	}},
	{"output/ReadSpill reads a spill file in pieces, and nothing else", func(e *env) {
		const n, limit = 20000, 1000
		want := countOutput(n)
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(n), StdoutMaxBytes: limit})
		path := res.Stdout.SpillPath
		if got := readSpill(e, path); got != want {
			e.t.Fatalf("reading the spill file in pieces through the executor must give the whole stream: %d bytes that differ from the %d-byte stream", len(got), len(want))
		}
		r := spillReader(e)
		c, err := r.ReadSpill(e.ctx, path, 5, 7)
		if err != nil || string(c.Data) != want[5:12] || c.Size != int64(len(want)) {
			e.t.Errorf("ReadSpill(offset 5, max 7) must give bytes 5 to 11 and the file's size (%d): %q, size %d, %v", len(want), c.Data, c.Size, err)
		}
		if c, err := r.ReadSpill(e.ctx, path, int64(len(want))+10, 100); err != nil || len(c.Data) != 0 {
			e.t.Errorf("ReadSpill past the end must give no bytes and no error: %q, %v", c.Data, err)
		}
		for _, at := range []struct {
			offset int64
			max    int
			what   string
		}{{0, 0, "of 0 bytes (a size probe)"}, {int64(len(want)), 100, "at the very end"}} {
			if c, err := r.ReadSpill(e.ctx, path, at.offset, at.max); err != nil || len(c.Data) != 0 || c.Size != int64(len(want)) {
				e.t.Errorf("ReadSpill %s must give no bytes, the file's size (%d) and no error: %q, size %d, %v", at.what, len(want), c.Data, c.Size, err)
			}
		}
		dir := path[:strings.LastIndexAny(path, `/\`)+1]
		others := []string{"/etc/passwd", "relative/" + path, dir + "../" + path[len(dir):], dir}
		if e.impl != nil {
			// The executor is on this machine: a link planted among its
			// spill files, to a file of the host's, is not one of them.
			link := dir + "dsh-planted-link"
			if err := os.Symlink("/etc/passwd", link); err == nil {
				defer os.Remove(link)
				others = append(others, link)
			}
		}
		for _, other := range others {
			if _, err := r.ReadSpill(e.ctx, other, 0, 100); !errors.Is(err, pluginapi.ErrNotASpill) {
				e.t.Errorf("ReadSpill(%q), not a spill file of the executor's, must fail with ErrNotASpill: %v", other, err)
			}
		}
	}},
	{"output/truncation never splits a character", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Repeat("é日🙂", 2000), StdoutMaxBytes: 999})
		if !res.Stdout.Truncated || !utf8.ValidString(res.Stdout.Text) {
			e.t.Errorf("truncation must cut on UTF-8 character boundaries: truncated %v, valid UTF-8 %v", res.Stdout.Truncated, utf8.ValidString(res.Stdout.Text))
		}
	}},
	{"output/a spill stops at its cap and says so", func(e *env) {
		configure(e, `{"spillCapBytes": 5000}`)
		want := countOutput(5000)
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(5000), StdoutMaxBytes: 1000})
		out := res.Stdout
		if !out.SpillTruncated || out.TotalBytes != int64(len(want)) {
			e.t.Errorf("a spill must stop at spillCapBytes and set SpillTruncated, TotalBytes still counting the stream (%d): spillTruncated %v total %d", len(want), out.SpillTruncated, out.TotalBytes)
		}
		if got := readSpill(e, out.SpillPath); got != want[:5000] {
			e.t.Errorf("a capped spill file must hold the stream's first spillCapBytes (5000); it holds %d bytes", len(got))
		}
	}},
	{"output/a background read returns at most the collection cap; the rest waits", func(e *env) {
		want := countOutput(5000)
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Count(5000), StdoutMaxBytes: 1000}))
		if err != nil {
			e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
		}
		var got strings.Builder
		for range len(want) {
			r, err := p.ReadOutput(e.ctx)
			if err != nil {
				e.t.Fatalf("ReadOutput of a known process must not fail: %v", err)
			}
			if len(r.Delta) > 1000 || r.Lossy {
				e.t.Fatalf("a read must return at most StdoutMaxBytes (1000) of stdout, and lose nothing the buffer holds: read %d bytes, lossy %v", len(r.Delta), r.Lossy)
			}
			if r.Delta == "" {
				break
			}
			got.WriteString(r.Delta)
		}
		if got.String() != want {
			e.t.Errorf("what a read cannot take must wait for the next ones: reads joined to %d bytes, want the stream's %d", got.Len(), len(want))
		}
	}},
	{"output/background reads past the buffer are lossy; the spill keeps all", func(e *env) {
		configure(e, `{"backgroundBufferBytes": 1000}`)
		want := countOutput(10000)
		p, r := e.finished(e.sh.Count(10000))
		if !r.Lossy || len(r.Delta) > 1000 || !strings.HasSuffix(r.Delta, "9999\n10000\n") {
			e.t.Errorf("a read past backgroundBufferBytes (1000) must be Lossy and give the last bytes within it: read %d bytes, lossy %v", len(r.Delta), r.Lossy)
		}
		if got := readSpill(e, r.StdoutSpillPath); got != want {
			e.t.Errorf("a background process must spill its whole stream from the first byte: the spill holds %d bytes of the %d-byte stream", len(got), len(want))
		}
		if r2, _ := p.ReadOutput(e.ctx); r2.Lossy || r2.Delta != "" {
			e.t.Errorf("a read after a lossy one must return nothing, not Lossy again: %+v", r2)
		}
	}},
}
