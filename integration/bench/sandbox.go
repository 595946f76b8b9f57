package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// sandboxLatency is the median latency of `true` under bash-sandbox
// (workspace-write: its spawner forks the command, already confined)
// against bash-local, both launched as plugins and measured in turn. Both
// run in a git repository, where the sandbox keeps the default protected
// paths (the repository's hooks and configuration among them).
func sandboxLatency(ctx context.Context, bin string, local pluginapi.ShellExecutor, n, warmup int) ([]figure, error) {
	repo, err := os.MkdirTemp("", "dsh-bench-repo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(repo)
	if out, err := exec.CommandContext(ctx, "git", "init", "-q", repo).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git init: %v: %s", err, out)
	}
	// The commands run in the repository: the launch checks that they
	// cannot write the binary there, which they could in the current
	// directory (a checkout, where make bench runs).
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-sandbox", Path: bin, Args: host.ServeArgs("bash-sandbox")},
		Workdirs: []string{repo}})
	if err != nil {
		return nil, err
	}
	defer h.Close(ctx)
	sandboxed := h.Shell()
	times, err := interleave(n, warmup,
		func() error { return runTrueIn(ctx, sandboxed, repo) },
		func() error { return runTrueIn(ctx, local, repo) })
	if err != nil {
		return nil, err
	}
	sb, bl := median(times[0]), median(times[1])
	return []figure{
		{"sandbox_true_latency_ratio", sb / bl, "x", "<=", 1.15},
		{"sandbox_true_median", sb, "ms", ">=", 0},
		{"sandbox_local_true_median", bl, "ms", ">=", 0},
	}, nil
}
