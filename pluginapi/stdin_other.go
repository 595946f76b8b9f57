//go:build !unix

package pluginapi

// detachStdin leaves the standard input as the plugin inherited it: the
// executors run no commands on Windows yet (see stdin_unix.go).
func detachStdin() error { return nil }
