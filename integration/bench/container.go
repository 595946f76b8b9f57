package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	ctr "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// containerEngine is the Docker Engine API the container step measures
// against (DSH_BENCH_DOCKER_HOST; .ci/engines says how to start one), and
// its image (DSH_BENCH_IMAGE, dsh-test:local by default).
func containerEngine() (addr, image string) {
	image = os.Getenv("DSH_BENCH_IMAGE")
	if image == "" {
		image = "dsh-test:local"
	}
	return os.Getenv("DSH_BENCH_DOCKER_HOST"), image
}

// containerLatency is run(true) through the container executor's plugin
// (bin/plugins/dsh-executor-container beside dsh-host, its agent in
// bin/agent), against the same `bash -c true` by the engine's exec API (a
// new exec per command: create, attach, read to the end, inspect for the
// exit code, as a per-command executor must), and against bash-local
// through its plugin: interleaved, in the same run. Then a model-sized
// job_output read of a `yes` against one of a quiet job
// (jobOutputBusyVsIdle), and a 256 MiB spill read through ReadSpill
// against docker cp (readSpillVsDockerCp).
func containerLatency(ctx context.Context, bin string, local pluginapi.ShellExecutor, n, warmup int) ([]figure, error) {
	addr, image := containerEngine()
	if addr == "" {
		fmt.Fprintln(os.Stderr, "bench: container step NOT MEASURED: set DSH_BENCH_DOCKER_HOST to a Docker Engine API address with the image "+image+" loaded (.ci/engines starts dockerd and builds it)")
		return nil, nil
	}
	settings, _ := json.Marshal(map[string]any{"engine": addr, "image": image})
	containerOptions := host.Options{
		Executor: host.Executor{Name: "container", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-container")},
		Settings: settings,
	}
	h, err := host.Launch(ctx, containerOptions)
	if err != nil {
		return nil, err
	}
	defer h.Close(ctx)
	inContainer := h.Shell()
	if err := runTrue(ctx, inContainer); err != nil { // the container starts
		return nil, err
	}

	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// A container of the same image, running, for the execs.
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &ctr.Config{Image: image, Cmd: []string{"sleep", "100000"}}, HostConfig: &ctr.HostConfig{NetworkMode: "none"},
	})
	if err != nil {
		return nil, err
	}
	defer c.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	if _, err := c.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return nil, err
	}
	times, err := interleave(n/5, warmup/5,
		func() error { return runTrue(ctx, inContainer) },
		func() error { return execTrue(ctx, c, created.ID) },
		func() error { return runTrue(ctx, local) })
	if err != nil {
		return nil, err
	}
	executor, api, bl := median(times[0]), median(times[1]), median(times[2])
	busyVsIdle, err := jobOutputBusyVsIdle(ctx, containerOptions, "yes", n/5, warmup/5)
	if err != nil {
		return nil, err
	}
	readSpill, err := containerReadSpill(ctx, bin, addr, image)
	if err != nil {
		return nil, err
	}
	tty, err := ttyKeystrokeVia(ctx, bin, "container", map[string]any{"engine": addr, "image": image}, n/5, warmup/5)
	if err != nil {
		return nil, err
	}
	return append(tty, []figure{
		{"container_exec_api_vs_executor_speedup", api / executor, "x", ">=", 10},
		{"container_vs_local_true_ratio", executor / bl, "x", "<=", 2},
		{"container_true_median", executor, "ms", ">=", 0},
		{"container_exec_api_true_median", api, "ms", ">=", 0},
		{"job_output_busy_vs_idle_container", busyVsIdle, "x", "<=", 1.5},
		{"container_readspill_vs_docker_cp", readSpill, "x", ">=", 0.8},
	}...), nil
}

// containerReadSpill is readSpillVsDockerCp through a container executor
// of its own, whose workspace is a temporary directory of this machine.
func containerReadSpill(ctx context.Context, bin, addr, image string) (float64, error) {
	ws, err := os.MkdirTemp("", "dsh-bench-ws-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(ws)
	settings, _ := json.Marshal(map[string]any{"engine": addr, "image": image, "workspace": ws})
	h, err := host.Launch(ctx, host.Options{
		Executor: host.Executor{Name: "container", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-container")},
		Settings: settings,
	})
	if err != nil {
		return 0, err
	}
	defer h.Close(ctx)
	return readSpillVsDockerCp(ctx, h.Shell(), addr, ws, spillRuns)
}

// spillRuns is how many reads of the spill, each way, a ReadSpill figure
// is the median of.
const spillRuns = 3

// execTrue runs `bash -c true` in container id by the engine's exec API,
// as a per-command executor does: a new exec, attached, read to its end,
// then inspected for its exit code.
func execTrue(ctx context.Context, c *client.Client, id string) error {
	ex, err := c.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: []string{"bash", "-c", "true"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return err
	}
	at, err := c.ExecAttach(ctx, ex.ID, client.ExecAttachOptions{})
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, at.Reader)
	at.Close()
	in, err := c.ExecInspect(ctx, ex.ID, client.ExecInspectOptions{})
	if err != nil {
		return err
	}
	if in.ExitCode != 0 {
		return fmt.Errorf("bash -c true by the exec API exited %d", in.ExitCode)
	}
	return nil
}
