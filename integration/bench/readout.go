package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/registry"
)

// jobOutputBusyVsIdle is the median time of a model-sized job_output read
// (Jobs.Output, the default collection cap) of a job whose producer floods
// its output, against the same read of a quiet job, through opts's
// executor: interleaved, in the same run. busy is the flooding command.
func jobOutputBusyVsIdle(ctx context.Context, opts host.Options, busy string, n, warmup int) (float64, error) {
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: opts})
	if err != nil {
		return 0, err
	}
	defer r.Close(ctx)
	const owner = "bench"
	jobs := r.Jobs()
	start := func(cmd string) (host.JobID, error) {
		info, err := jobs.Start(ctx, owner, pluginapi.ExecRequest{Command: cmd})
		return info.ID, err
	}
	loud, err := start(busy)
	if err != nil {
		return 0, err
	}
	quiet, err := start("sleep 100000")
	if err != nil {
		return 0, err
	}
	defer jobs.Kill(ctx, owner, loud)
	defer jobs.Kill(ctx, owner, quiet)
	read := func(id host.JobID) func() error {
		return func() error {
			_, _, err := jobs.Output(ctx, owner, id)
			return err
		}
	}
	times, err := interleave(n, warmup, read(loud), read(quiet))
	if err != nil {
		return 0, err
	}
	return median(times[0]) / median(times[1]), nil
}

// spillBytes is the size of the spill the ReadSpill figure reads.
const spillBytes = 256 << 20

// readSpillVsDockerCp reads a spill of spillBytes out of the container
// that shell runs its commands in, through ReadSpill in chunks of
// MaxSpillRead, against `docker cp` (the Docker CLI, on the same engine)
// of the same bytes, and checks that both copies have the same SHA-256.
// docker cp cannot see a tmpfs, and a container's spill files lie in its
// /tmp, one: what it copies is the spill's copy in the workspace, a bind
// mount it does see.
func readSpillVsDockerCp(ctx context.Context, shell pluginapi.ShellExecutor, engine, workspace string, runs int) (float64, error) {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return 0, fmt.Errorf("the docker CLI: %w", err)
	}
	res, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{
		Command: fmt.Sprintf("head -c %d /dev/urandom; cat /etc/hostname >&2", spillBytes), StderrMaxBytes: 1000,
	}, nil)
	if err != nil {
		return 0, err
	}
	spill, id := res.Stdout.SpillPath, strings.TrimSpace(res.Stderr.Text)
	if res.Stdout.TotalBytes != spillBytes || spill == "" || id == "" {
		return 0, fmt.Errorf("the 256 MiB run: total %d, spill %q, container %q", res.Stdout.TotalBytes, spill, id)
	}
	defer removeSpills(context.WithoutCancel(ctx), shell, []string{spill, res.Stderr.SpillPath})
	copied := filepath.Join(workspace, "dsh-bench-spill-copy")
	if c, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{Command: "cp -- '" + spill + "' " + copied}, nil); err != nil || c.ExitCode == nil || *c.ExitCode != 0 {
		return 0, fmt.Errorf("copying the spill into the workspace: %+v, %v", c, err)
	}
	defer os.Remove(copied)
	reader, ok := shell.(pluginapi.SpillReader)
	if !ok {
		return 0, fmt.Errorf("the container executor reads no spills")
	}
	dir, err := os.MkdirTemp("", "dsh-bench-cp-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	var viaSpill, viaCp []float64
	var sumSpill, sumCp string
	for range runs {
		// Both sides land the bytes in a file, as docker cp does, and are
		// hashed after the clock stops.
		landed := filepath.Join(dir, "spill")
		f, err := os.Create(landed)
		if err != nil {
			return 0, err
		}
		began := time.Now()
		for off := int64(0); ; {
			chunk, err := reader.ReadSpill(ctx, spill, off, pluginapi.MaxSpillRead)
			if err != nil {
				f.Close()
				return 0, err
			}
			if _, err := f.Write(chunk.Data); err != nil {
				f.Close()
				return 0, err
			}
			off += int64(len(chunk.Data))
			if off >= chunk.Size || len(chunk.Data) == 0 {
				break
			}
		}
		err = f.Close()
		viaSpill = append(viaSpill, time.Since(began).Seconds())
		if err != nil {
			return 0, err
		}
		if sumSpill, err = registry.FileSHA256(landed); err != nil {
			return 0, err
		}
		os.Remove(landed)

		out := filepath.Join(dir, "copy")
		cp := exec.CommandContext(ctx, docker, "-H", engine, "cp", id+":"+copied, out)
		began = time.Now()
		if msg, err := cp.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("docker cp: %v: %s", err, msg)
		}
		viaCp = append(viaCp, time.Since(began).Seconds())
		if sumCp, err = registry.FileSHA256(out); err != nil {
			return 0, err
		}
		os.Remove(out)
	}
	if sumSpill != sumCp {
		return 0, fmt.Errorf("the spill read through ReadSpill (sha256 %s) is not what docker cp copied (%s)", sumSpill, sumCp)
	}
	// A ratio of rates: docker cp's time over ReadSpill's.
	return median(viaCp) / median(viaSpill), nil
}
