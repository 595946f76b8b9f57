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
// through its plugin: interleaved, in the same run. Then what background
// output of `yes` reaches the caller through the container each second
// (warmOutputRate: the median of backgroundRuns windows after one
// unmeasured, whose rate is reported too), and of a cheaper producer of
// the same bytes (gnuLikeYes).
func containerLatency(ctx context.Context, bin string, local pluginapi.ShellExecutor, n, warmup int) ([]figure, error) {
	addr, image := containerEngine()
	if addr == "" {
		fmt.Fprintln(os.Stderr, "bench: container step NOT MEASURED: set DSH_BENCH_DOCKER_HOST to a Docker Engine API address with the image "+image+" loaded (.ci/engines starts dockerd and builds it)")
		return nil, nil
	}
	settings, _ := json.Marshal(map[string]any{"engine": addr, "image": image})
	h, err := host.Launch(ctx, host.Options{
		Executor: host.Executor{Name: "container", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-container")},
		Settings: settings,
	})
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
	bgFirst, bg, err := warmOutputRate(ctx, inContainer, "yes", 1<<20, backgroundRuns)
	if err != nil {
		return nil, err
	}
	_, gnuBg, err := warmOutputRate(ctx, inContainer, gnuLikeYes, 1<<20, backgroundRuns)
	if err != nil {
		return nil, err
	}
	return []figure{
		{"container_exec_api_vs_executor_speedup", api / executor, "x", ">=", 10},
		{"container_vs_local_true_ratio", executor / bl, "x", "<=", 2},
		{"container_true_median", executor, "ms", ">=", 0},
		{"container_exec_api_true_median", api, "ms", ">=", 0},
		{"container_background_throughput", bg / (1 << 20), "MiB/s", ">=", 100},
		{"container_background_first_window_throughput", bgFirst / (1 << 20), "MiB/s", ">=", 0},
		{"container_background_gnu_like_yes_throughput", gnuBg / (1 << 20), "MiB/s", ">=", 0},
	}, nil
}

// backgroundRuns is how many windows of 2 s a background throughput
// through the container is the median of.
const backgroundRuns = 3

// gnuLikeYes writes what `yes` writes, as GNU yes writes it (the local
// step's producer): pages of "y\n" at a time. The image's yes is
// busybox's, which puts every character through stdio and costs about as
// much CPU per megabyte as the agent, the plugin and the host together:
// on a machine of two CPUs it takes a share the executor then lacks.
// Informational: what the executor carries from a cheaper producer. Each
// argument is 4095 lines of "y"; yes ends it with the last newline.
const gnuLikeYes = `yes "$(yes | head -n 4095)"`

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
