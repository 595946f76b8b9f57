//go:build !linux

package container

import "fmt"

// seccompProfile: moby's default profile, which the container's own is
// made from, is offered on Linux alone; without a profile no container is
// made.
func seccompProfile(goarch string, network bool) ([]byte, error) {
	return nil, fmt.Errorf("container: the seccomp profile is made from moby's default, which its package offers on Linux only")
}
