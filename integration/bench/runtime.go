package main

import (
	"context"
	"os/exec"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// coldStart is the wall time of `dsh-host run -- true`, from process start
// to its exit with the result, against `bash -c true`; and the median time
// from launching a plugin to its first answer (Launch: start, handshake,
// Describe).
func coldStart(ctx context.Context, bin string, n int) ([]figure, error) {
	times, err := interleave(n, 3,
		func() error { return exec.Command(bin, "run", "--", "true").Run() },
		func() error { return exec.Command("bash", "-c", "true").Run() })
	if err != nil {
		return nil, err
	}
	var launches []float64
	for range n {
		began := time.Now()
		h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local")}})
		if err != nil {
			return nil, err
		}
		launches = append(launches, float64(time.Since(began))/float64(time.Millisecond))
		if err := h.Close(ctx); err != nil {
			return nil, err
		}
	}
	return []figure{
		{"cold_start_run_true_ratio", median(times[0]) / median(times[1]), "x", "<=", 8},
		{"cold_start_run_true_median", median(times[0]), "ms", ">=", 0},
		{"plugin_start_to_first_rpc_median", median(launches), "ms", ">=", 0},
	}, nil
}

// hotReload is the median time of Runtime.Reload: from the call to the new
// plugin serving (and the old one shut down).
func hotReload(ctx context.Context, bin string, n int) ([]figure, error) {
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options: host.Options{Executor: host.Executor{Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local")}},
	})
	if err != nil {
		return nil, err
	}
	defer r.Close(ctx)
	var reloads []float64
	for range n {
		began := time.Now()
		if err := r.Reload(ctx); err != nil {
			return nil, err
		}
		reloads = append(reloads, float64(time.Since(began))/float64(time.Millisecond))
	}
	return []figure{{"hot_reload_median", median(reloads), "ms", "<", 100}}, nil
}
