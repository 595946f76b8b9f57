package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// runTrue runs `true` through the plugin: Resolve and Run, one round trip.
func runTrue(ctx context.Context, shell pluginapi.ShellExecutor) error {
	res, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil && (res.ExitCode == nil || *res.ExitCode != 0) {
		err = fmt.Errorf("true did not exit 0: %+v", res)
	}
	return err
}

// directTrue runs `bash -c true` in this process, collecting stdout and
// stderr as a run through the plugin does: the baseline of record.
func directTrue() error {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", "-c", "true")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd.Run()
}

// latency is the median latency of `true` through the plugin against the
// baseline, and against os/exec with the output discarded (no pipes); and
// what the plugin adds over the baseline in gRPC round trips (a Describe's,
// measured in turn with them): the target, since one round trip alone
// sits above the old ratios' bounds on a slow machine. The old ratios stay,
// to inform.
func latency(ctx context.Context, shell pluginapi.ShellExecutor, n, warmup int) ([]figure, error) {
	discarded := func() error { return exec.Command("bash", "-c", "true").Run() }
	describe := func() error { _, err := shell.Describe(ctx); return err }
	times, err := interleave(n, warmup, func() error { return runTrue(ctx, shell) }, directTrue, discarded, describe)
	if err != nil {
		return nil, err
	}
	plugin, local, bare, rtt := median(times[0]), median(times[1]), median(times[2]), median(times[3])
	return []figure{
		{"run_true_overhead_vs_rtt", (plugin - local) / rtt, "x", "<=", 1.25},
		{"run_true_latency_ratio", plugin / local, "x", ">=", 0},
		{"run_true_latency_ratio_vs_discarded_output", plugin / bare, "x", ">=", 0},
		{"run_true_plugin_median", plugin, "ms", ">=", 0},
		{"run_true_direct_median", local, "ms", ">=", 0},
		{"run_true_direct_discarded_median", bare, "ms", ">=", 0},
		{"describe_rtt_median", rtt, "ms", ">=", 0},
	}, nil
}

// sequential is the throughput of n sequential runs of `true` through the
// plugin against the baseline, in alternating blocks of n/10, with a block
// of Describe round trips beside each: what a run through the plugin adds
// over the baseline, in round trips, is the target; the old throughput
// ratio stays, to inform.
func sequential(ctx context.Context, shell pluginapi.ShellExecutor, n int) ([]figure, error) {
	block := max(n/10, 1)
	var viaPlugin, direct, rtts time.Duration
	for done := 0; done < n; done += block {
		for _, side := range []struct {
			total *time.Duration
			fn    func() error
		}{
			{&viaPlugin, func() error { return runTrue(ctx, shell) }},
			{&direct, directTrue},
			{&rtts, func() error { _, err := shell.Describe(ctx); return err }},
		} {
			began := time.Now()
			for range block {
				if err := side.fn(); err != nil {
					return nil, err
				}
			}
			*side.total += time.Since(began)
		}
	}
	perSec := func(d time.Duration) float64 { return float64(n) / d.Seconds() }
	return []figure{
		{"sequential_1000_overhead_vs_rtt", float64(viaPlugin-direct) / float64(rtts), "x", "<=", 1.25},
		{"sequential_1000_true_throughput_ratio", perSec(viaPlugin) / perSec(direct), "x", ">=", 0},
		{"sequential_1000_true_plugin_runs_per_s", perSec(viaPlugin), "runs/s", ">=", 0},
		{"sequential_1000_true_direct_runs_per_s", perSec(direct), "runs/s", ">=", 0},
	}, nil
}
