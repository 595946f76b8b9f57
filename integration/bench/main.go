// Command bench measures dsh-host against in-process os/exec, in the same
// run, and prints one line per figure:
//
//	bench NAME VALUE UNIT target OP BOUND ok|MISS
//
// then how many figures missed their target. A figure whose target is
// ">= 0" is informational: it has no target of its own. It builds the dsh-host binary it
// measures into a temporary directory (or takes one with -dsh-host) and
// launches its built-in bash-local executor as a plugin, the way
// `dsh-host run` does. It reports; it does not fail: the exit status is
// nonzero only when it cannot measure. With -only sandbox, or -breakdown,
// the sandbox step also times what each step of a sandboxed run's start
// adds (sandbox_step_* lines, from the confine package's TestRunInitSteps:
// run it from the module's directory, as root).
//
//	go run ./integration/bench [-n 300] [-warmup 30] [-dsh-host PATH] [-breakdown] [-only STEP]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dsh-host/dsh-host/host"
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
	switch f.op {
	case ">=":
		return f.value >= f.bound
	case "<":
		return f.value < f.bound
	}
	return f.value <= f.bound
}

// String is the figure's line, without its newline.
func (f figure) String() string {
	status := "ok"
	if !f.ok() {
		status = "MISS"
	}
	return fmt.Sprintf("bench %s %.2f %s target %s %s %s",
		f.name, f.value, f.unit, f.op, strconv.FormatFloat(f.bound, 'f', -1, 64), status)
}

func (f figure) print() { fmt.Println(f) }

func main() {
	n := flag.Int("n", 300, "measured iterations of each side")
	warmup := flag.Int("warmup", 30, "unmeasured iterations of each side first")
	bin := flag.String("dsh-host", "", "dsh-host binary to measure (default: build one)")
	breakdown := flag.Bool("breakdown", false, "also time the parts of a run through the plugin")
	only := flag.String("only", "", "measure only this step (latency, sandbox, sequential, concurrent, spill, background, cold, reload, mcp, mcp-http, tty, container, ssh, kubernetes, breakdown)")
	flag.Parse()
	if err := run(*bin, *n, *warmup, *breakdown, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, n, warmup int, breakdown bool, only string) error {
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
	spillDir, err := os.MkdirTemp("", "dsh-bench-spill-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(spillDir)
	settings, _ := json.Marshal(map[string]string{"spillDir": spillDir})
	h, err := host.Launch(ctx, host.Options{
		Executor: host.Executor{Name: "bash-local", Path: bin, Args: host.ServeArgs("bash-local")},
		Settings: settings,
	})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	shell := h.Shell()

	var figures []figure
	measure := func(fs []figure, err error) error {
		if err != nil {
			return err
		}
		for _, f := range fs {
			f.print()
		}
		figures = append(figures, fs...)
		return nil
	}
	steps := []struct {
		name string
		run  func() ([]figure, error)
	}{
		{"latency", func() ([]figure, error) { return latency(ctx, shell, n, warmup) }},
		{"sandbox", func() ([]figure, error) {
			if err := measure(sandboxLatency(ctx, bin, shell, n, warmup)); err != nil {
				return nil, err
			}
			if breakdown || only == "sandbox" {
				// Printed as they come, with the steps it could not time.
				figures = append(figures, sandboxStepCosts(ctx)...)
			}
			return nil, nil
		}},
		{"sequential", func() ([]figure, error) { return sequential(ctx, shell, 1000) }},
		{"concurrent", func() ([]figure, error) { return concurrent(ctx, shell, 64) }},
		{"spill", func() ([]figure, error) { return spillThroughput(ctx, h, spillDir) }},
		{"background", func() ([]figure, error) { return backgroundThroughput(ctx, shell, bin, n, warmup) }},
		{"cold", func() ([]figure, error) { return coldStart(ctx, bin, 20) }},
		{"reload", func() ([]figure, error) { return hotReload(ctx, bin, 10) }},
		{"mcp", func() ([]figure, error) { return mcpLatency(ctx, shell, bin, n, warmup) }},
		{"mcp-http", func() ([]figure, error) { return mcpHTTP(ctx, bin, n, warmup) }},
		{"tty", func() ([]figure, error) { return ttyLatency(ctx, bin, n, warmup) }},
		{"container", func() ([]figure, error) { return containerLatency(ctx, bin, shell, n, warmup) }},
		{"ssh", func() ([]figure, error) { return sshLatency(ctx, bin, n, warmup) }},
		{"kubernetes", func() ([]figure, error) { return kubernetesLatency(ctx, bin, n, warmup) }},
	}
	if breakdown {
		steps = append(steps, struct {
			name string
			run  func() ([]figure, error)
		}{"breakdown", func() ([]figure, error) { return parts(ctx, shell, n, warmup) }})
	}
	for _, step := range steps {
		if only != "" && step.name != only {
			continue
		}
		if err := measure(step.run()); err != nil {
			return err
		}
	}
	misses := 0
	for _, f := range figures {
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
