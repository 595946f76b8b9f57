// Command bench measures dsh-host against in-process os/exec, in the same
// run, and prints one line per figure:
//
//	bench NAME VALUE UNIT target OP BOUND ok|MISS
//
// then how many figures missed their target. It builds the dsh-host binary it
// measures into a temporary directory (or takes one with -dsh-host) and
// launches its built-in bash-local executor as a plugin, the way
// `dsh-host run` does. It reports; it does not fail: the exit status is
// nonzero only when it cannot measure.
//
//	go run ./integration/bench [-n 300] [-warmup 30] [-dsh-host PATH] [-breakdown]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// figure is one measured value and its target.
type figure struct {
	name  string
	value float64
	unit  string
	op    string // "<=" or ">="
	bound float64
}

func (f figure) ok() bool {
	if f.op == ">=" {
		return f.value >= f.bound
	}
	return f.value <= f.bound
}

func (f figure) print() {
	status := "ok"
	if !f.ok() {
		status = "MISS"
	}
	fmt.Printf("bench %s %.2f %s target %s %s %s\n",
		f.name, f.value, f.unit, f.op, strconv.FormatFloat(f.bound, 'f', -1, 64), status)
}

func main() {
	n := flag.Int("n", 300, "measured iterations of each side")
	warmup := flag.Int("warmup", 30, "unmeasured iterations of each side first")
	bin := flag.String("dsh-host", "", "dsh-host binary to measure (default: build one)")
	breakdown := flag.Bool("breakdown", false, "also time the parts of a run through the plugin")
	flag.Parse()
	if err := run(*bin, *n, *warmup, *breakdown); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, warmup int, breakdown bool) error {
	if bin == "" {
		dir, err := os.MkdirTemp("", "dsh-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "dsh-host")
		build := exec.Command("go", "build", "-o", bin, "github.com/dsh-host/dsh-host/cmd/dsh-host")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building dsh-host: %w", err)
		}
	}
	ctx := context.Background()
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{
		Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local"),
	}})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	shell := h.Shell()

	// Through the plugin: Resolve and Run of `true`, one round trip.
	viaPlugin := func() error {
		res, err := pluginapi.RunRequest(ctx, shell, pluginapi.ExecRequest{Command: "true"}, nil)
		if err == nil && (res.ExitCode == nil || *res.ExitCode != 0) {
			err = fmt.Errorf("true did not exit 0: %+v", res)
		}
		return err
	}
	// In process, collecting stdout and stderr as a run through the plugin
	// does: the baseline of record.
	direct := func() error {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", "-c", "true")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		return cmd.Run()
	}
	// In process, output discarded (to /dev/null): no pipes to read.
	discarded := func() error { return exec.Command("bash", "-c", "true").Run() }

	times, err := interleave(n, warmup, viaPlugin, direct, discarded)
	if err != nil {
		return err
	}
	plugin, local, bare := median(times[0]), median(times[1]), median(times[2])
	figures := []figure{
		{"run_true_latency_ratio", plugin / local, "x", "<=", 1.05},
		{"run_true_latency_ratio_vs_discarded_output", plugin / bare, "x", "<=", 1.05},
		{"run_true_plugin_median", plugin, "ms", "<=", 50},
		{"run_true_direct_median", local, "ms", "<=", 50},
		{"run_true_direct_discarded_median", bare, "ms", "<=", 50},
	}
	if breakdown {
		more, err := parts(ctx, shell, n, warmup)
		if err != nil {
			return err
		}
		figures = append(figures, more...)
	}
	misses := 0
	for _, f := range figures {
		f.print()
		if !f.ok() {
			misses++
		}
	}
	fmt.Printf("bench: %d of %d figures missed their target\n", misses, len(figures))
	return nil
}

// interleave times n calls of each fn after warmup unmeasured ones,
// alternating between them (and which goes first) so that both see the same
// machine. It returns each fn's durations in milliseconds.
func interleave(n, warmup int, fns ...func() error) ([][]float64, error) {
	times := make([][]float64, len(fns))
	for i := range warmup + n {
		for j := range fns {
			k := (j + i) % len(fns)
			began := time.Now()
			if err := fns[k](); err != nil {
				return nil, err
			}
			if i >= warmup {
				times[k] = append(times[k], float64(time.Since(began))/float64(time.Millisecond))
			}
		}
	}
	return times, nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
