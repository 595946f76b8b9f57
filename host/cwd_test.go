package host

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		dir, root string
		want      bool
	}{{"/a/b", "/a/b", true}, {"/a/b/c", "/a/b", true}, {"/a/bc", "/a/b", false}, {"/a", "/a/b", false}, {"/x", "/", true}, {"/x", "", false}} {
		if got := within(c.dir, c.root); got != c.want {
			t.Errorf("within(%q, %q) = %v", c.dir, c.root, got)
		}
	}
}

// The report comes out of the output whole, wherever late output put it,
// and only the one tagged with the call's nonce.
func TestTakeCWDReport(t *testing.T) {
	nonce := newNonce()
	other := newNonce()
	report := "\n" + nonce + " \x00/w\x00/w/sub\n"
	out := pluginapi.CollectedOutput{Text: "hi\n\n" + other + " \x00/\x00/etc\n" + report + "late\n"}
	out.TotalBytes = int64(len(out.Text))
	rep, ok := takeCWDReport(&out, nonce)
	if !ok || rep.gone || rep.start != "/w" || rep.end != "/w/sub" {
		t.Fatalf("report %+v %v", rep, ok)
	}
	if want := "hi\n\n" + other + " \x00/\x00/etc\nlate\n"; out.Text != want || out.TotalBytes != int64(len(want)) {
		t.Errorf("output %q (%d bytes)", out.Text, out.TotalBytes)
	}
	if got := string(withoutCWDReport([]byte("a"+report+"b"), nonce)); got != "ab" {
		t.Errorf("live chunk: %q", got)
	}
}

// The wrapper keeps the command's exit status and output, and reports
// where it ended even when the command exits or redirects its stdout.
func TestCWDWrapUnderBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		command  string
		out      string
		exitCode int
		end      string
	}{
		{"echo hi", "hi\n", 0, dir},
		{"printf 'no newline'; exit 4", "no newline", 4, "/"},
		{"exec >/dev/null; cd /; echo gone", "", 0, "/"},
		{"cd / && false", "", 1, "/"},
	} {
		if c.end == "/" && !strings.Contains(c.command, "cd /") {
			c.command = "cd /; " + c.command
		}
		nonce := newNonce()
		cmd := exec.Command("bash", "-c", cwdWrap(c.command, dir, nonce, true))
		stdout, err := cmd.Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out := pluginapi.CollectedOutput{Text: string(stdout)}
		rep, ok := takeCWDReport(&out, nonce)
		if !ok || rep.end != c.end || out.Text != c.out || code != c.exitCode {
			t.Errorf("%q: output %q, exit %d, report %+v %v", c.command, out.Text, code, rep, ok)
		}
	}
}
