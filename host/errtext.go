package host

import "strings"

// ErrorText is err's message for a person or a model to read: without the
// prefixes the layers add ("pluginapi: ", "host: ", "registry: ", and
// "settings: " after "host: "). Only a whole segment that is one of them
// is dropped, never the last, so a path that ends like one is kept.
func ErrorText(err error) string {
	segs := strings.Split(err.Error(), ": ")
	kept := segs[:0]
	for i, seg := range segs {
		last := i == len(segs)-1
		switch {
		case last:
		case seg == "pluginapi", seg == "host", seg == "registry":
			continue
		case seg == "settings" && i > 0 && segs[i-1] == "host":
			continue
		}
		kept = append(kept, seg)
	}
	return strings.Join(kept, ": ")
}
