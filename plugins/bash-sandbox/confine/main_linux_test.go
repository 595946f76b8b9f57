//go:build linux

package confine

import (
	"os"
	"testing"
)

// TestMain is also the spawner: the tests that start one run this binary
// again.
func TestMain(m *testing.M) {
	if IsHelper() {
		os.Exit(HelperMain())
	}
	os.Exit(m.Run())
}
