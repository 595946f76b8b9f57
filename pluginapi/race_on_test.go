//go:build race

package pluginapi_test

// raceEnabled says the tests run under the race detector, whose sync.Pool
// drops a share of what is put back: pooled buffers are then allocated
// anew now and then, and allocation counts run higher.
const raceEnabled = true
