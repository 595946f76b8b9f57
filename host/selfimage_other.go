//go:build !linux

package host

// selfImage is what re-executes this program: its path, where no
// /proc/self/exe names the running image. A built-in executor is not
// checked there either: the file is the host's own binary, which ran from
// that very place.
func selfImage(path string) string { return path }
