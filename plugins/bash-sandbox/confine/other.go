//go:build !linux

package confine

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// Probe says what this platform can enforce of p: nothing but
// danger-full-access, since Landlock and seccomp are Linux's.
func Probe(p Policy) ([]string, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	if p.Mode == pluginapi.SandboxDangerFullAccess {
		return nil, nil
	}
	return nil, fmt.Errorf("%w %s: Landlock is Linux's, and this is %s", ErrUnenforceable, p.Mode, runtime.GOOS)
}

// Apply confines nothing here: it fails as Probe does.
func Apply(p Policy) ([]string, error) { return Probe(p) }

// IsHelper is false: there is no spawner on this platform.
func IsHelper() bool { return false }

// HelperMain is never run on this platform.
func HelperMain() int { return 2 }

// ErrSpawnerGone: a spawner exited; none exists on this platform.
var ErrSpawnerGone = errors.New("the sandbox spawner is gone")

// Spawner cannot exist on this platform.
type Spawner struct{ Enforced, Limits, Protected []string }

// StartSpawner fails as Probe does.
func StartSpawner(exe string, p Policy) (*Spawner, error) {
	_, err := Probe(p)
	if err == nil {
		err = fmt.Errorf("%w %s: no spawner on %s", ErrUnenforceable, p.Mode, runtime.GOOS)
	}
	return nil, err
}

// Start never runs: no Spawner is ever made here.
func (s *Spawner) Start(localexec.Launch) (localexec.Started, error) { return nil, syscall.ENOSYS }

// StartsElsewhere: a spawner's commands are not the plugin's children.
func (s *Spawner) StartsElsewhere() {}

// Idle is true: nothing runs.
func (s *Spawner) Idle() bool { return true }

// Intact is true: nothing is held.
func (s *Spawner) Intact() bool { return true }

// Close has nothing to do.
func (s *Spawner) Close() error { return nil }

// Gone is closed: there is no spawner.
func (s *Spawner) Gone() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
