package host

import "os"

// selfImage is what re-executes this program: /proc/self/exe, the image
// the kernel runs (a file put at path since, by a rename or a build, is not
// run), or path where /proc is not mounted.
func selfImage(path string) string {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe"
	}
	return path
}
