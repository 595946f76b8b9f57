package host

import (
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A read that names no spill files (an executor that names them once)
// leaves the paths an earlier read named: a recovery still finds them.
func TestAReadWithoutSpillPathsKeepsTheKnownOnes(t *testing.T) {
	var p readPosition
	p.saw(pluginapi.OutputRead{Delta: "a", StdoutSpillPath: "/s/out", StderrSpillPath: "/s/err", Ends: &pluginapi.StreamEnds{Stdout: 1}})
	p.saw(pluginapi.OutputRead{Delta: "b", Ends: &pluginapi.StreamEnds{Stdout: 2}})
	if got := p.spillPaths(); got != [2]string{"/s/out", "/s/err"} {
		t.Errorf("the spill paths after a read that named none: %q, want the first read's", got)
	}
	// One path named alone replaces both: an executor that names one
	// stream's only has no spill file for the other.
	p.saw(pluginapi.OutputRead{StdoutSpillPath: "/t/out"})
	if got := p.spillPaths(); got != [2]string{"/t/out", ""} {
		t.Errorf("the spill paths after a read that named stdout's alone: %q", got)
	}
}
