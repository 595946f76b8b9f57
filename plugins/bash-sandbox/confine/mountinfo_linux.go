//go:build linux

package confine

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mountEntry is a line of /proc/self/mountinfo: where a filesystem is
// mounted, its type, and its superblock's options.
type mountEntry struct {
	point        string
	fstype       string
	superOptions string
}

// mountTable reads this process's mounts, in the order the kernel lists
// them (a mount after the one it is mounted on).
func mountTable() ([]mountEntry, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" {
			continue
		}
		// id parent major:minor root point options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if !ok || len(pf) < 5 || len(qf) < 3 {
			return nil, fmt.Errorf("/proc/self/mountinfo: unexpected line %q", line)
		}
		out = append(out, mountEntry{point: unescapeOctal(pf[4]), fstype: qf[0], superOptions: qf[2]})
	}
	return out, nil
}

// unescapeOctal undoes the kernel's \NNN escapes (of space, tab, newline
// and backslash) in a mountinfo field.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
