package pluginapitest

import (
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

// readSpill reads a spill file, failing the test when it cannot.
func readSpill(e *env, path string) string {
	e.t.Helper()
	if path == "" {
		e.t.Fatal("no spill path")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatalf("reading the spill file: %v", err)
	}
	return string(data)
}

var outputCases = []suiteCase{
	{"output/small output is whole and never spills", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(10)})
		if res.Stdout.Text != countOutput(10) || res.Stdout.Truncated || res.Stdout.SpillPath != "" {
			e.t.Errorf("stdout %+v, want the whole text, not truncated, no spill file", res.Stdout)
		}
	}},
	{"output/past the cap: head and tail within it, the full stream spilled", func(e *env) {
		const n, limit = 20000, 1000
		want := countOutput(n)
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(n), StdoutMaxBytes: limit})
		out := res.Stdout
		if !out.Truncated || out.TotalBytes != int64(len(want)) {
			e.t.Errorf("truncated %v total %d, want true and %d", out.Truncated, out.TotalBytes, len(want))
		}
		if len(out.Text) > limit {
			e.t.Errorf("collected %d bytes over a %d-byte cap", len(out.Text), limit)
		}
		if !strings.HasPrefix(out.Text, "1\n2\n3\n") || !strings.HasSuffix(out.Text, "19999\n20000\n") {
			e.t.Errorf("collected text does not keep the head and the tail: %q", out.Text)
		}
		if got := readSpill(e, out.SpillPath); got != want {
			e.t.Errorf("the spill file holds %d bytes that differ from the %d-byte stream", len(got), len(want))
		}
		if fi, err := os.Stat(out.SpillPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
			e.t.Errorf("spill file mode %v is readable by others", fi.Mode().Perm())
		}
		if err := e.x.Close(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		// An executor as the suite made it spills into a directory of its
		// own; a remote one's host may have given it one of the host's.
		if _, err := os.Stat(out.SpillPath); e.impl != nil && !os.IsNotExist(err) {
			e.t.Errorf("the spill file outlived Close: %v", err)
		}
	}},
	{"output/truncation never splits a character", func(e *env) {
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Repeat("é日🙂", 2000), StdoutMaxBytes: 999})
		if !res.Stdout.Truncated || !utf8.ValidString(res.Stdout.Text) {
			e.t.Errorf("truncated %v, valid UTF-8 %v", res.Stdout.Truncated, utf8.ValidString(res.Stdout.Text))
		}
	}},
	{"output/a spill stops at its cap and says so", func(e *env) {
		configure(e, `{"spillCapBytes": 5000}`)
		want := countOutput(5000)
		res := e.run(pluginapi.ExecRequest{Command: e.sh.Count(5000), StdoutMaxBytes: 1000})
		out := res.Stdout
		if !out.SpillTruncated || out.TotalBytes != int64(len(want)) {
			e.t.Errorf("spillTruncated %v total %d, want true and %d", out.SpillTruncated, out.TotalBytes, len(want))
		}
		if got := readSpill(e, out.SpillPath); got != want[:5000] {
			e.t.Errorf("the spill file holds %d bytes, want the stream's first 5000", len(got))
		}
	}},
	{"output/background reads past the buffer are lossy; the spill keeps all", func(e *env) {
		configure(e, `{"backgroundBufferBytes": 1000}`)
		want := countOutput(10000)
		p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: e.sh.Count(10000)}))
		if err != nil {
			e.t.Fatal(err)
		}
		if _, err := p.Wait(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		r, err := p.ReadOutput(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		if !r.Lossy || len(r.Delta) > 1000 || !strings.HasSuffix(r.Delta, "9999\n10000\n") {
			e.t.Errorf("read %d bytes, lossy %v; want a lossy read of the last <= 1000 bytes", len(r.Delta), r.Lossy)
		}
		if got := readSpill(e, r.StdoutSpillPath); got != want {
			e.t.Errorf("the background spill holds %d bytes, want the whole %d-byte stream", len(got), len(want))
		}
		if r2, _ := p.ReadOutput(e.ctx); r2.Lossy || r2.Delta != "" {
			e.t.Errorf("a second read: %+v, want nothing and not lossy", r2)
		}
	}},
}
