//go:build !amd64

package main

// legacy has nothing to try where the older calls never were.
func legacy(uint32) {}
