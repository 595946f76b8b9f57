//go:build !unix

package localexec

// ForkLauncher would start a process as a child of this one; here it
// cannot.
type ForkLauncher struct{}

// Start implements Launcher: it fails, as every start does here.
func (ForkLauncher) Start(Launch) (Started, error) { return nil, errNoProcesses }
