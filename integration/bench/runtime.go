package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// coldStart is the wall time of `dsh-host run -- true`, from process start
// to its exit with the result, against the design floor of the same (a
// minimal host and plugin pair, buildFloor), alternated; and the median time
// from launching a plugin to its first answer (Launch: start, handshake,
// Describe).
func coldStart(ctx context.Context, bin string, n int) ([]figure, error) {
	floor, err := buildFloor(ctx)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(filepath.Dir(floor))
	times, err := interleave(n, 3,
		func() error { return exec.Command(bin, "run", "--", "true").Run() },
		func() error { return exec.Command(floor).Run() })
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
		{"cold_start_vs_design_floor", median(times[0]) / median(times[1]), "x", "<=", 1.3},
		{"cold_start_run_true_median", median(times[0]), "ms", ">=", 0},
		{"cold_start_design_floor_median", median(times[1]), "ms", ">=", 0},
		{"plugin_start_to_first_rpc_median", median(launches), "ms", ">=", 0},
	}, nil
}

// buildFloor builds the design floor of a cold start (./floor: a host
// that launches a plugin over go-plugin gRPC with dsh-host's TLS setup,
// and one RPC that runs bash -c true) into a directory of its own, from
// the module's go-plugin and grpc, and returns its path.
func buildFloor(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "dsh-bench-floor-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "floor")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/dsh-host/dsh-host/integration/bench/floor").CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building the design floor: %v: %s", err, out)
	}
	return bin, nil
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
