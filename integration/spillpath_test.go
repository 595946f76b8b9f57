package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dsh-host run names a spill file only where it outlives the run
// (--spill-dir): without one the files go when dsh-host exits, and a path
// to nothing would mislead.
func TestRunNamesOnlyASpillFileThatStays(t *testing.T) {
	tag := scenario(t)
	r := dsh(t, tag, "run", "--", "seq 1 100000")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 100000 {
		t.Fatalf("exit %d, %d lines", r.code, strings.Count(r.stdout, "\n"))
	}
	if strings.Contains(r.stderr, "spill") || strings.Contains(r.stderr, "/dsh-host-") {
		t.Errorf("without --spill-dir, stderr names a file that is about to vanish: %q", r.stderr)
	}

	dir := t.TempDir()
	r = dsh(t, tag, "run", "--spill-dir", dir, "--", "seq 1 100000")
	const prefix = "dsh-host run: the full stream is in "
	var path string
	for _, line := range lines(r.stderr) {
		if p, ok := strings.CutPrefix(line, prefix); ok {
			path = p
		}
	}
	if path == "" || !strings.HasPrefix(path, dir+string(filepath.Separator)) {
		t.Fatalf("with --spill-dir %s, stderr %q names no spill file there", dir, r.stderr)
	}
	if data, err := os.ReadFile(path); err != nil || strings.Count(string(data), "\n") != 100000 {
		t.Errorf("the spill file %s after the run: %d lines, %v", path, strings.Count(string(data), "\n"), err)
	}
}
