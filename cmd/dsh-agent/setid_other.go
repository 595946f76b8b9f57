//go:build !linux

package main

import "errors"

// refuseSetID needs Linux's seccomp.
func refuseSetID() error { return errors.New("refusing set-id bits needs Linux's seccomp") }
