package host

import "time"

// ShortReplaceWait bounds a call's wait for a dead plugin's successor by
// d, until the test ends.
func ShortReplaceWait(t interface{ Cleanup(func()) }, d time.Duration) {
	was := replaceWait
	replaceWait = d
	t.Cleanup(func() { replaceWait = was })
}
