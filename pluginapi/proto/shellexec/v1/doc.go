// Package shellexecv1 is the generated Go code of the shellexec.v1 wire
// protocol (shellexec.proto): the messages and the ShellExecutor gRPC service
// between a dsh-host and an executor plugin. Regenerate it with `make proto`;
// `make check-proto` fails when it drifts. Use pluginapi, not this package.
package shellexecv1
