package integration

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make check-proto fails, saying why, when it cannot check: with no protoc
// to run, or a protoc that fails. (It once passed both ways, its loop
// finding no generated file to compare.)
func TestCheckProtoFailsWhenItCannotCheck(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		skipOrFail(t, "no make: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ protoc, says string }{
		{"dsh-no-such-protoc", "dsh-no-such-protoc is not installed"},
		{"false", "check-proto: false failed"},
	} {
		out, err := exec.Command("make", "-s", "-C", root, "check-proto", "PROTOC="+c.protoc).CombinedOutput()
		if err == nil {
			t.Errorf("make check-proto PROTOC=%s passed:\n%s", c.protoc, out)
			continue
		}
		if !strings.Contains(string(out), c.says) {
			t.Errorf("make check-proto PROTOC=%s: %v, and does not say %q:\n%s", c.protoc, err, c.says, out)
		}
	}
}
