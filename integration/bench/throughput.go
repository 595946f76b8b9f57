package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// concurrent is how long n simultaneous runs of `sleep 0.5` take, end to end.
func concurrent(ctx context.Context, shell pluginapi.ShellExecutor, n int) ([]figure, error) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	began := time.Now()
	for range n {
		wg.Go(func() {
			res, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{Command: "sleep 0.5"}, nil)
			if err == nil && (res.ExitCode == nil || *res.ExitCode != 0) {
				err = fmt.Errorf("sleep 0.5: %+v", res)
			}
			errs <- err
		})
	}
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return []figure{{"concurrent_64_sleep_0.5_wall", took.Seconds(), "s", "<", 1.5}}, nil
}

// oneGiB is the stream the spill figure pushes.
const oneGiB = 1 << 30

// spillThroughput pushes 1 GiB through Run, spilled to a file by the plugin,
// against os/exec writing the same stream straight to a file; and the peak
// RSS of this process (the host) and of the plugin while it flows.
func spillThroughput(ctx context.Context, h *host.Host, dir string) ([]figure, error) {
	cmd := "head -c " + strconv.Itoa(oneGiB) + " /dev/zero"
	pluginPID := h.PluginPID()
	var viaPlugin, direct []float64
	var hostPeak, pluginPeak int64
	for range 3 {
		resetPeakRSS(os.Getpid())
		resetPeakRSS(pluginPID)
		began := time.Now()
		res, err := pluginapi.RunRequest(ctx, h.Shell(), pluginapi.ExecRequest{Command: cmd}, nil)
		if err != nil {
			return nil, err
		}
		took := time.Since(began)
		hostPeak = max(hostPeak, peakRSS(os.Getpid()))
		pluginPeak = max(pluginPeak, peakRSS(pluginPID))
		if res.Stdout.TotalBytes != oneGiB || res.Stdout.SpillPath == "" {
			return nil, fmt.Errorf("1 GiB run: total %d bytes, spill %q", res.Stdout.TotalBytes, res.Stdout.SpillPath)
		}
		if fi, err := os.Stat(res.Stdout.SpillPath); err != nil || fi.Size() != oneGiB {
			return nil, fmt.Errorf("the spill file does not hold 1 GiB: %v", err)
		}
		os.Remove(res.Stdout.SpillPath)
		viaPlugin = append(viaPlugin, oneGiB/took.Seconds())

		out := filepath.Join(dir, "direct")
		f, err := os.Create(out)
		if err != nil {
			return nil, err
		}
		c := exec.Command("bash", "-c", cmd)
		c.Stdout = f
		began = time.Now()
		err = c.Run()
		took = time.Since(began)
		f.Close()
		os.Remove(out)
		if err != nil {
			return nil, err
		}
		direct = append(direct, oneGiB/took.Seconds())
	}
	mib := func(b float64) float64 { return b / (1 << 20) }
	return []figure{
		{"spill_1GiB_throughput_ratio", median(viaPlugin) / median(direct), "x", ">=", 0.7},
		{"spill_1GiB_plugin_throughput", mib(median(viaPlugin)), "MiB/s", ">=", 0},
		{"spill_1GiB_direct_throughput", mib(median(direct)), "MiB/s", ">=", 0},
		{"spill_1GiB_host_peak_rss", mib(float64(hostPeak)), "MiB", "<=", 64},
		{"spill_1GiB_plugin_peak_rss", mib(float64(pluginPeak)), "MiB", "<=", 64},
	}, nil
}

// backgroundThroughput is how many bytes per second reach the caller through
// ReadOutput from a process writing as fast as it can, against reading the
// same process's pipe directly (informational: no target); and a
// model-sized job_output read of such a process against one of a quiet
// one, through bash-local (jobOutputBusyVsIdle).
func backgroundThroughput(ctx context.Context, shell pluginapi.ShellExecutor, bin string, n, warmup int) ([]figure, error) {
	viaPlugin, lossy, err := readOutputRate(ctx, shell, "yes")
	if err != nil {
		return nil, err
	}
	busyVsIdle, err := jobOutputBusyVsIdle(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local")}}, "yes", n, warmup)
	if err != nil {
		return nil, err
	}
	direct, err := directPipeRate()
	if err != nil {
		return nil, err
	}
	note := "background_readoutput_throughput"
	if lossy {
		note += "_lossy"
	}
	return []figure{
		{note, viaPlugin / (1 << 20), "MiB/s", ">=", 0},
		{"background_direct_pipe_throughput", direct / (1 << 20), "MiB/s", ">=", 0},
		{"job_output_busy_vs_idle_bash_local", busyVsIdle, "x", "<=", 1.5},
	}, nil
}

// throughputWindow is how long a throughput is measured.
const throughputWindow = 2 * time.Second

// readOutputRate is how many bytes per second of command's output, run in
// the background through shell, reach the caller through ReadOutput, in
// reads of the default collection cap; lossy says a read lost bytes (the
// command wrote faster).
func readOutputRate(ctx context.Context, shell pluginapi.ShellExecutor, command string) (rate float64, lossy bool, err error) {
	spec, err := shell.Resolve(ctx, pluginapi.ExecRequest{Command: command})
	if err != nil {
		return 0, false, err
	}
	p, err := shell.Start(ctx, spec)
	if err != nil {
		return 0, false, err
	}
	var got int64
	var spills []string
	began := time.Now()
	for time.Since(began) < throughputWindow {
		r, err := p.ReadOutput(ctx)
		if err != nil {
			return 0, false, err
		}
		got += int64(len(r.Delta))
		lossy = lossy || r.Lossy
		spills = []string{r.StdoutSpillPath, r.StderrSpillPath}
	}
	rate = float64(got) / time.Since(began).Seconds()
	if _, err := p.Kill(ctx); err != nil {
		return 0, false, err
	}
	return rate, lossy, removeSpills(ctx, shell, spills)
}

// removeSpills removes spill files where shell runs its commands, as the
// model would: each window then starts with the memory and the room of
// the one before (a container's /tmp, where they lie, is a tmpfs of 1
// GiB, and a spill that finds it full stops writing, which costs less).
func removeSpills(ctx context.Context, shell pluginapi.ShellExecutor, paths []string) error {
	cmd := "rm -f --"
	for _, p := range paths {
		if p != "" {
			cmd += " '" + strings.ReplaceAll(p, "'", `'\''`) + "'"
		}
	}
	spec, err := shell.Resolve(ctx, pluginapi.ExecRequest{Command: cmd})
	if err != nil {
		return err
	}
	res, err := shell.Run(ctx, spec)
	if err != nil {
		return err
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		return fmt.Errorf("removing the spill files: %s%s", res.Stdout.Text, res.Stderr.Text)
	}
	return nil
}

// directPipeRate is how many bytes per second this process reads from the
// pipe of a `yes` it started.
func directPipeRate() (float64, error) {
	c := exec.Command("yes")
	pipe, err := c.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := c.Start(); err != nil {
		return 0, err
	}
	buf := make([]byte, 64<<10)
	var direct int64
	began := time.Now()
	for time.Since(began) < throughputWindow {
		n, err := pipe.Read(buf)
		direct += int64(n)
		if err == io.EOF {
			break
		}
	}
	rate := float64(direct) / time.Since(began).Seconds()
	_ = c.Process.Kill()
	_ = c.Wait()
	return rate, nil
}

// resetPeakRSS resets the peak resident set size the kernel reports for pid.
func resetPeakRSS(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

// peakRSS reads pid's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
