package pluginapi

import (
	"fmt"
	"strings"
)

// ExplainLaunchError turns what go-plugin says when a plugin's launch
// fails into what went wrong, for the failures it misnames; other errors
// come back as they are.
//
//   - A first line on the plugin's stdout that is not the handshake
//     (go-plugin: "Unrecognized remote plugin message", and a guess that
//     the plugin was not compiled for this architecture): the plugin wrote
//     to stdout before Serve. The message quotes the line.
//   - "does not look like a TLS handshake": the plugin was built against a
//     pluginapi older than the host's, which speaks no TLS without the
//     keys handed on TLSFDVar.
func ExplainLaunchError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	const unrecognized = "Unrecognized remote plugin message: "
	if _, rest, ok := strings.Cut(msg, unrecognized); ok {
		line, _, _ := strings.Cut(rest, "\n")
		if line != "" {
			return fmt.Errorf("the plugin wrote %q to its stdout before its handshake: an executor must write nothing to stdout before pluginapi.Serve, which writes the handshake there (log to stderr; a library that prints at init must be silenced)", line)
		}
		return fmt.Errorf("the plugin ended its stdout without a handshake: is it an executor whose main calls pluginapi.Serve? (go-plugin: %s)", strings.ReplaceAll(msg, "\n", " "))
	}
	if strings.Contains(msg, "does not look like a TLS handshake") {
		return fmt.Errorf("%w (the plugin speaks no TLS: it was built against a pluginapi older than this host's, which hands a plugin its keys on %s; rebuild it against this one)", err, TLSFDVar)
	}
	return err
}
