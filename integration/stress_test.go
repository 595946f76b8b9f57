package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The fast part of make stress: a short soak of one host, through the same
// program, with the same bounds.
func TestSoakShort(t *testing.T) {
	cmd := exec.Command("go", "run", "./stress", "-dsh-host", bins.host, "-runs", "500", "-jobs", "50")
	cmd.Env = append(os.Environ(), tagVar+"="+scenario(t))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "MISS") {
		t.Errorf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
}
