// Package k8stestlock orders the tests of several packages that share the
// test cluster (KUBECONFIG): `go test ./...` runs packages at the same
// time, and a test that restarts a part of the cluster (its API server)
// would cut the streams of another package's test in flight. Such a test
// holds the lock exclusively; a test that needs the cluster to answer
// throughout holds it shared. The lock is a file lock (flock) beside the
// kubeconfig, named for it, released when the test ends (or its process
// does).
package k8stestlock
