package host

import (
	"fmt"
	"strings"
)

// Locate places err, a problem an owner of section found with it (an
// executor's Configure, say, refusing two settings that contradict each
// other), at the line of the first key of the section that err's message
// names, else at the section's own line: "FILE:LINE: section.key: ...".
// The key is found by its path beneath the section ("maxTimeoutMs",
// "limits.memoryMiB"), as a whole word, so a message that prefixes it
// ("sandboxPolicy.limits.memoryMiB") still finds it. err stays wrapped. A
// nil err, or a section the file does not have, returns err as it is.
func (f *SettingsFile) Locate(section string, err error) error {
	return f.locate(err, section)
}

// locate places err at the first key of sections that its message names,
// else at the first of sections the file has; err as it is when it has
// none of them.
func (f *SettingsFile) locate(err error, sections ...string) error {
	if err == nil || f == nil {
		return err
	}
	msg := err.Error()
	key, line, at := "", 0, len(msg)+1
	for _, section := range sections {
		sectionLine, ok := f.sectionLines[section]
		if !ok {
			continue
		}
		if key == "" {
			key, line = section, sectionLine
		}
		for path, l := range f.lines {
			rel, ok := strings.CutPrefix(path, section+".")
			if !ok {
				continue
			}
			i := wordIndex(msg, rel)
			if i < 0 {
				continue
			}
			// The earliest mention wins; at one place, the longest path
			// ("limits.memoryMiB" over "limits").
			if i < at || i == at && len(rel) > len(key)-len(section)-1 {
				key, line, at = path, l, i
			}
		}
	}
	if key == "" {
		return err
	}
	return fmt.Errorf("%w: %s:%d: %s: %w", ErrSettings, f.Path, line, key, err)
}

// wordIndex is the index of the first occurrence of word in s that no
// letter, digit or underscore adjoins, or -1.
func wordIndex(s, word string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], word)
		if i < 0 {
			return -1
		}
		i += off
		end := i + len(word)
		if (i == 0 || !isWordByte(s[i-1])) && (end == len(s) || !isWordByte(s[end])) {
			return i
		}
		off = i + 1
	}
}

func isWordByte(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}
