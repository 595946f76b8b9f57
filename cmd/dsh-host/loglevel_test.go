package main

import (
	"strings"
	"testing"
)

// A DSH_LOG_LEVEL that names no level is said, not silently ignored.
func TestUnknownLogLevelIsSaid(t *testing.T) {
	stdout, stderr := dshHost(t, []string{"DSH_LOG_LEVEL=loud"}, "run", "--", "echo hi")
	if stdout != "hi\n" {
		t.Errorf("stdout %q", stdout)
	}
	if want := `DSH_LOG_LEVEL="loud" is not a level`; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not say %q", stderr, want)
	}
}
