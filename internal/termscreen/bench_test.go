package termscreen_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/internal/termscreen"
)

// typicalOutput is about n bytes of what a terminal job prints: build and
// test lines with colours, a listing, a progress bar redrawn with \r, and
// long lines that wrap.
func typicalOutput(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		switch i % 8 {
		case 0:
			fmt.Fprintf(&b, "\x1b[1;32mok\x1b[0m  \tgithub.com/example/project/pkg%d\t0.%03ds\r\n", i, i%1000)
		case 1:
			fmt.Fprintf(&b, "-rw-r--r-- 1 user group %8d Dec  7 15:%02d file-%d.go\r\n", i*37, i%60, i)
		case 2:
			fmt.Fprintf(&b, "\x1b[33mwarning\x1b[0m: unused variable `x%d` at src/main.rs:%d:%d\r\n", i, i%500, i%80)
		case 3:
			for p := 0; p <= 100; p += 25 {
				fmt.Fprintf(&b, "\rDownloading [%-20s] %3d%%", strings.Repeat("=", p/5), p)
			}
			b.WriteString("\r\n")
		case 4:
			fmt.Fprintf(&b, "%s\r\n", strings.Repeat("long line that wraps past the edge ", 4))
		default:
			fmt.Fprintf(&b, "    at com.example.Service.handle(Service.java:%d) — ünïcödé ✓\r\n", i)
		}
	}
	return []byte(b.String())
}

// BenchmarkWrite feeds 1 MiB of typical output to an 80x24 screen, in
// the 4 KiB pieces a pty's reads give.
func BenchmarkWrite(b *testing.B) {
	out := typicalOutput(1 << 20)
	s := termscreen.New(80, 24)
	defer s.Close()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		for p := out; len(p) > 0; {
			n := min(len(p), 4096)
			_, _ = s.Write(p[:n])
			p = p[n:]
		}
	}
}

// BenchmarkWriteAndSnapshot is a terminal job's cost as a model sees it:
// 1 MiB of output, then the screen rendered.
func BenchmarkWriteAndSnapshot(b *testing.B) {
	out := typicalOutput(1 << 20)
	s := termscreen.New(80, 24)
	defer s.Close()
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		for p := out; len(p) > 0; {
			n := min(len(p), 4096)
			_, _ = s.Write(p[:n])
			p = p[n:]
		}
		_ = s.Snapshot()
	}
}

// BenchmarkSnapshot renders a full screen.
func BenchmarkSnapshot(b *testing.B) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			s := termscreen.New(size[0], size[1])
			defer s.Close()
			_, _ = s.Write(typicalOutput(size[0] * size[1] * 2))
			b.ReportAllocs()
			for b.Loop() {
				_ = s.Snapshot()
			}
		})
	}
}

// BenchmarkNew is what a terminal job's screen costs to keep: its bytes
// per op are its memory.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		s := termscreen.New(80, 24)
		_ = s.Close()
	}
}
