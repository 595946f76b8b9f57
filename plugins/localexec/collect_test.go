package localexec

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// asciiStream is n bytes with no repeats at short range, so a prefix or
// suffix check pins down where a cut happened.
func asciiStream(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte(' ')
	}
	return b.String()[:n]
}

// collect writes data to a fresh collector with the given cap, in chunks
// of the given sizes (cycled), or in one write when chunks is empty.
func collect(cap int64, data string, chunks ...int) pluginapi.CollectedOutput {
	c := newCollector(cap)
	p := []byte(data)
	for i := 0; len(p) > 0; i++ {
		n := len(p)
		if len(chunks) > 0 {
			n = min(len(p), chunks[i%len(chunks)])
		}
		if k, err := c.Write(p[:n]); k != n || err != nil {
			panic("collector Write failed")
		}
		p = p[n:]
	}
	return c.output()
}

var noteRE = regexp.MustCompile(`\n\[\.\.\. (\d+) bytes omitted \.\.\.\]\n`)

// splitTruncated splits a truncated text into head, omitted count and tail.
func splitTruncated(t *testing.T, text string) (head string, omitted int64, tail string) {
	t.Helper()
	locs := noteRE.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		t.Fatalf("truncated text has no omission note: %q", text)
	}
	if len(locs) > 1 {
		t.Fatalf("more than one omission note: %q", text)
	}
	m := locs[0]
	n, err := strconv.ParseInt(text[m[2]:m[3]], 10, 64)
	if err != nil {
		t.Fatalf("omitted count %q: %v", text[m[2]:m[3]], err)
	}
	return text[:m[0]], n, text[m[1]:]
}

func TestCollectorUnderCap(t *testing.T) {
	tests := []struct {
		name string
		cap  int64
		data string
	}{
		{"empty", 100, ""},
		{"small", 100, "hello\n"},
		{"exactly the cap", 100, asciiStream(100)},
		{"odd cap, exact", 7, "abcdefg"},
		{"cap 1, one byte", 1, "x"},
		{"multi-byte, exact", 12, "é日本🙂"}, // 2+3+3+4 = 12 bytes
		{"default cap", 30000, asciiStream(29999)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, chunks := range [][]int{nil, {1}, {3, 7}, {int(tt.cap)}} {
				got := collect(tt.cap, tt.data, chunks...)
				want := pluginapi.CollectedOutput{Text: tt.data, TotalBytes: int64(len(tt.data))}
				if got != want {
					t.Errorf("chunks %v: got %+v, want %+v", chunks, got, want)
				}
			}
		})
	}
}

func TestCollectorOverCap(t *testing.T) {
	tests := []struct {
		cap int64
		n   int
	}{
		{100, 101},
		{100, 1000},
		{101, 250},
		{64, 65},
		{1000, 5000},
		{30000, 30001},
		{30000, 1 << 20},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(int(tt.cap))+"/"+strconv.Itoa(tt.n), func(t *testing.T) {
			data := asciiStream(tt.n)
			got := collect(tt.cap, data)
			if !got.Truncated {
				t.Fatalf("not truncated: %+v", got)
			}
			if got.TotalBytes != int64(tt.n) {
				t.Errorf("TotalBytes = %d, want %d", got.TotalBytes, tt.n)
			}
			if int64(len(got.Text)) > tt.cap {
				t.Errorf("len(Text) = %d, over the cap %d", len(got.Text), tt.cap)
			}
			head, omitted, tail := splitTruncated(t, got.Text)
			if head == "" || tail == "" {
				t.Errorf("head %q or tail %q is empty", head, tail)
			}
			if !strings.HasPrefix(data, head) {
				t.Errorf("head %q is not the start of the stream", head)
			}
			if !strings.HasSuffix(data, tail) {
				t.Errorf("tail %q is not the end of the stream", tail)
			}
			if want := int64(tt.n - len(head) - len(tail)); omitted != want {
				t.Errorf("note says %d bytes omitted, want %d", omitted, want)
			}
			// The cap is used, not wasted: head and tail share it. (The note
			// is sized for the total; the omitted count can have fewer digits.)
			if slack := tt.cap - int64(len(got.Text)); slack > int64(len(strconv.Itoa(tt.n))) {
				t.Errorf("text is %d bytes under the cap %d", slack, tt.cap)
			}
			if d := len(head) - len(tail); d < -2 || d > 2 {
				t.Errorf("head %d and tail %d bytes are unbalanced", len(head), len(tail))
			}
		})
	}
}

// The result depends on the bytes, not on how the writes split them.
func TestCollectorChunkingInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	streams := []string{asciiStream(5000), strings.Repeat("é日本🙂\n", 300), asciiStream(61)}
	for _, cap := range []int64{1, 2, 5, 10, 57, 58, 59, 100, 333, 1000, 4999, 5000, 6000} {
		for _, data := range streams {
			want := collect(cap, data)
			for range 20 {
				chunks := make([]int, 1+r.IntN(6))
				for i := range chunks {
					chunks[i] = 1 + r.IntN(2*int(cap)+3)
				}
				if got := collect(cap, data, chunks...); got != want {
					t.Fatalf("cap %d, chunks %v: got %+v, one write gave %+v", cap, chunks, got, want)
				}
			}
			if got := collect(cap, data, 1); got != want {
				t.Fatalf("cap %d, byte at a time: got %+v, one write gave %+v", cap, got, want)
			}
		}
	}
}

// Output is cut on UTF-8 boundaries: valid input gives valid text, within
// the cap, whatever the cap.
func TestCollectorUTF8Boundaries(t *testing.T) {
	streams := map[string]string{
		"mixed":   strings.Repeat("é日本🙂", 40),
		"emoji":   strings.Repeat("🙂", 100),
		"cjk":     strings.Repeat("日本語", 50),
		"latin":   strings.Repeat("aé", 150),
		"newline": strings.Repeat("日本\n🙂é\n", 30),
	}
	for name, data := range streams {
		for cap := int64(1); cap <= 200; cap++ {
			if cap < minNoteCap {
				// Caps too small for the note take another path; see
				// TestCollectorTinyCapsUTF8.
				continue
			}
			for _, chunks := range [][]int{nil, {1}, {5, 2}} {
				got := collect(cap, data, chunks...)
				if !utf8.ValidString(got.Text) {
					t.Fatalf("%s, cap %d, chunks %v: invalid UTF-8 %q", name, cap, chunks, got.Text)
				}
				if int64(len(got.Text)) > cap {
					t.Fatalf("%s, cap %d: %d bytes", name, cap, len(got.Text))
				}
				if int64(len(data)) > cap {
					head, omitted, tail := splitTruncated(t, got.Text)
					if !strings.HasPrefix(data, head) || !strings.HasSuffix(data, tail) {
						t.Fatalf("%s, cap %d: head %q / tail %q not from the stream", name, cap, head, tail)
					}
					if omitted != int64(len(data)-len(head)-len(tail)) {
						t.Fatalf("%s, cap %d: omitted %d, want %d", name, cap, omitted, len(data)-len(head)-len(tail))
					}
				}
			}
		}
	}
}

// Every cap, however small, yields valid UTF-8 from a valid stream: either
// the stream's tail, or head, note and tail.
func TestCollectorTinyCapsUTF8(t *testing.T) {
	data := strings.Repeat("é日本🙂", 40)
	for cap := int64(1); cap <= 200; cap++ {
		got := collect(cap, data)
		if !utf8.ValidString(got.Text) {
			t.Errorf("cap %d: invalid UTF-8 %q", cap, got.Text)
		}
		if !strings.HasSuffix(data, got.Text) && !noteRE.MatchString(got.Text) {
			t.Errorf("cap %d: %q is neither the tail of the stream nor head+note+tail", cap, got.Text)
		}
	}
}

// Tiny caps never exceed the cap and still count every byte.
func TestCollectorTinyCaps(t *testing.T) {
	for _, cap := range []int64{1, 2, 5, 10, 20, 51} {
		for _, data := range []string{asciiStream(int(cap) + 1), asciiStream(1000), strings.Repeat("x", 100000)} {
			got := collect(cap, data)
			if int64(len(got.Text)) > cap {
				t.Errorf("cap %d, %d bytes in: text %q is %d bytes", cap, len(data), got.Text, len(got.Text))
			}
			if !got.Truncated || got.TotalBytes != int64(len(data)) {
				t.Errorf("cap %d: Truncated %v, TotalBytes %d, want true, %d", cap, got.Truncated, got.TotalBytes, len(data))
			}
			if got.Text == "" {
				t.Errorf("cap %d: nothing kept", cap)
			}
			if !strings.HasSuffix(data, got.Text[max(0, len(got.Text)-int(cap/2)):]) {
				t.Errorf("cap %d: text %q does not end with the stream's end", cap, got.Text)
			}
		}
	}
}

func TestTrimIncomplete(t *testing.T) {
	tests := []struct {
		in, end, start string
	}{
		{"", "", ""},
		{"abc", "abc", "abc"},
		{"é", "é", "é"},
		{"a\xc3", "a", "a\xc3"},         // é cut after its first byte
		{"\xa9a", "\xa9a", "a"},         // é cut before its last byte
		{"a\xe6\x97", "a", "a\xe6\x97"}, // 日 cut after two bytes
		{"\x97\xa5b", "\x97\xa5b", "b"}, // 日 cut after its first byte
		{"a\xf0\x9f\x99", "a", "a\xf0\x9f\x99"},
		{"\x9f\x99\x82z", "\x9f\x99\x82z", "z"},
		{"日本", "日本", "日本"},
		{"🙂", "🙂", "🙂"},
		{"\xe2\x82", "", "\xe2\x82"},                                    // nothing but a cut character
		{"\xf0\x9f\x80", "", "\xf0\x9f\x80"},                            // cut, its last byte 0x80 (not ASCII)
		{"\x80\x80\x80", "\x80\x80\x80", ""},                            // nothing but the rest of a cut one
		{"\x80\x80\x80\x80", "\x80\x80\x80\x80", "\x80\x80\x80\x80"},    // longer than any such rest: not UTF-8, kept
		{"\x80\x80\x80\x80a", "\x80\x80\x80\x80a", "\x80\x80\x80\x80a"}, // the same, then a character
	}
	for _, tt := range tests {
		if got := string(trimIncompleteEnd([]byte(tt.in))); got != tt.end {
			t.Errorf("trimIncompleteEnd(%q) = %q, want %q", tt.in, got, tt.end)
		}
		if got := string(trimIncompleteStart([]byte(tt.in))); got != tt.start {
			t.Errorf("trimIncompleteStart(%q) = %q, want %q", tt.in, got, tt.start)
		}
	}
}

func TestOmissionNote(t *testing.T) {
	if got, want := omissionNote(1234), "\n[... 1234 bytes omitted ...]\n"; got != want {
		t.Errorf("omissionNote(1234) = %q, want %q", got, want)
	}
}
