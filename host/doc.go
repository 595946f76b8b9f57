// Package host launches a shell executor plugin and serves its ShellExecutor
// to Go callers: go-plugin over gRPC only, with mutual TLS on keys the host
// makes (ClientConfig.TLSConfig; the plugin's reach it on an inherited pipe),
// versioned plugin sets, an optional SHA-256 checksum of the binary, and
// plugin logs through go-hclog.
//
// Launch starts the plugin and checks it with Describe; Host.Shell is the
// executor; Host.Close terminates everything the plugin started and stops it.
// Setup resolves executors as dsh-host does (names, the plugin directory,
// the settings file and its checksum pins) and mounts them.
package host
