package main

import (
	"context"
	"os/exec"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
)

// parts times the pieces of a run through the plugin, interleaved with the
// direct spawn: a Describe round trip (the gRPC floor), Resolve alone, Run
// alone, and Resolve+Run of the same executor in this process (localexec's
// mechanics without gRPC).
func parts(ctx context.Context, shell pluginapi.ShellExecutor, n, warmup int) ([]figure, error) {
	spec, err := shell.Resolve(ctx, pluginapi.ExecRequest{Command: "true"})
	if err != nil {
		return nil, err
	}
	describe := func() error { _, err := shell.Describe(ctx); return err }
	resolve := func() error {
		_, err := shell.Resolve(ctx, pluginapi.ExecRequest{Command: "true"})
		return err
	}
	runOnly := func() error { _, err := shell.Run(ctx, spec); return err }
	local := bashlocal.New()
	defer local.Close(ctx)
	inProcess := func() error {
		spec, err := local.Resolve(ctx, pluginapi.ExecRequest{Command: "true"})
		if err == nil {
			_, err = local.Run(ctx, spec)
		}
		return err
	}
	direct := func() error { return exec.Command("bash", "-c", "true").Run() }
	times, err := interleave(n, warmup, describe, resolve, runOnly, inProcess, direct)
	if err != nil {
		return nil, err
	}
	// These figures inform; they have no target of their own.
	return []figure{
		{"part_describe_rtt_median", median(times[0]), "ms", ">=", 0},
		{"part_resolve_median", median(times[1]), "ms", ">=", 0},
		{"part_run_median", median(times[2]), "ms", ">=", 0},
		{"part_inprocess_run_median", median(times[3]), "ms", ">=", 0},
		{"part_direct_median", median(times[4]), "ms", ">=", 0},
	}, nil
}
