// Package pluginapi is the contract between a dsh-host and its shell
// executors: the ShellExecutor interface and its vocabulary types, the
// versioned gRPC protocol that carries them between processes, the go-plugin
// handshake and plugin set, Serve for executor authors, the sentinel errors
// and their gRPC codes, and the render contract (Render, ParseExitStatus).
//
// An executor author implements ShellExecutor and calls Serve from main; the
// conformance suite in pluginapitest proves the implementation over a real
// gRPC connection. A host launches the plugin with go-plugin using Handshake
// and PluginSets, and gets a ShellExecutor back from the "shell" plugin.
//
// This package imports nothing else of dsh-host.
package pluginapi
