package container

import (
	"time"

	"github.com/dsh-host/dsh-host/internal/hostid"
)

// PluginLabel is this process's label on the containers it makes.
var PluginLabel = hostid.Self

// SideStreamsOpened counts the side streams this process opened.
var SideStreamsOpened = &sideStreamsOpened

// BreakSideMounts has every side stream's mount name source instead of
// the socket's directory, as an engine that cannot see this machine's
// temporary directory finds it, until the test ends.
func BreakSideMounts(t interface{ Cleanup(func()) }, source string) {
	was := bindSource
	bindSource = func(*sideListener) string { return source }
	t.Cleanup(func() { bindSource = was })
}

// LongSideWait has the plugin wait up to d for an agent's side stream,
// until the test ends.
func LongSideWait(t interface{ Cleanup(func()) }, d time.Duration) {
	was := sideWait
	sideWait = d
	t.Cleanup(func() { sideWait = was })
}
