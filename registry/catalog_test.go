package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeExec writes an executable file.
func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func sum(content string) string {
	s := sha256.Sum256([]byte(content))
	return hex.EncodeToString(s[:])
}

func TestDiscoverFindsExecutorsByName(t *testing.T) {
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "dsh-executor-bash-local"), "#!/bin/sh\n")
	writeExec(t, filepath.Join(dir, "dsh-executor-remote"), "#!/bin/sh\necho remote\n")
	writeExec(t, filepath.Join(dir, "unrelated-tool"), "#!/bin/sh\n")
	if err := os.WriteFile(filepath.Join(dir, "dsh-executor-notexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("dsh-executor-remote", filepath.Join(dir, "dsh-executor-alias")); err != nil {
		t.Fatal(err)
	}
	c, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range c.Entries() {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, ","); got != "alias,bash-local,remote" {
		t.Fatalf("executors %s, want alias,bash-local,remote", got)
	}
	alias, err := c.Lookup("alias", "")
	if err != nil {
		t.Fatal(err)
	}
	if alias.Path != filepath.Join(c.Dir(), "dsh-executor-remote") || alias.SHA256 != sum("#!/bin/sh\necho remote\n") {
		t.Errorf("alias %+v: want the link resolved to the remote binary and its checksum", alias)
	}
}

func TestDiscoverRefusesALinkOutOfTheDirectory(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "evil")
	writeExec(t, outside, "#!/bin/sh\n")
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "dsh-executor-evil")); err != nil {
		t.Fatal(err)
	}
	if _, err := Discover(dir); !errors.Is(err, ErrOutsidePluginDir) {
		t.Fatalf("Discover with a link out: %v, want ErrOutsidePluginDir", err)
	}
}

func TestLookupVerifiesTheChecksum(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "dsh-executor-bash-local")
	writeExec(t, bin, "#!/bin/sh\n")
	c, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("bash-local", strings.ToUpper(sum("#!/bin/sh\n"))); err != nil {
		t.Errorf("the right checksum: %v", err)
	}
	// The binary is replaced after discovery: the check reads it as it is.
	writeExec(t, bin, "#!/bin/sh\necho tampered\n")
	_, err = c.Lookup("bash-local", sum("#!/bin/sh\n"))
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("a tampered binary: %v, want ErrChecksumMismatch", err)
	}
	for _, want := range []string{sum("#!/bin/sh\n"), sum("#!/bin/sh\necho tampered\n")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not give both sums", err)
		}
	}
	if _, err := c.Lookup("nope", ""); !errors.Is(err, ErrNotInCatalog) {
		t.Errorf("Lookup of a missing executor: %v, want ErrNotInCatalog", err)
	}
}
