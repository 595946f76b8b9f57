//go:build !unix

package k8stestlock

import "testing"

// Shared takes no lock where there is no flock: the test cluster runs on
// Linux.
func Shared(t testing.TB) {}

// Exclusive takes no lock where there is no flock.
func Exclusive(t testing.TB) {}
