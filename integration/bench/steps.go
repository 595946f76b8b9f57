package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// stepRuns is how many times TestRunInitSteps starts /bin/true for each
// step (it reports the median).
const stepRuns = 200

// sandboxStepPkg is the package whose TestRunInitSteps times the steps.
const sandboxStepPkg = "./plugins/bash-sandbox/confine"

// sandboxSteps are the steps of a sandboxed run's start, in the order
// TestRunInitSteps adds them, each with what a run has once it is taken.
var sandboxSteps = []struct{ name, with string }{
	{"none", "no namespaces"},
	{"newpid", "a PID namespace"},
	{"newipc", "PID and IPC namespaces"},
	{"newns", "PID, IPC and mount namespaces"},
	{"proc", "the namespaces and /proc"},
	{"confine", "the namespaces, /proc and Landlock+seccomp"},
	{"cgroups", "the namespaces, /proc, Landlock+seccomp and the cgroups"},
	// Not on top of cgroups: its increment is over confine (stepBase).
	{"protect", "the namespaces, /proc, Landlock+seccomp and a repository's protected paths"},
	// Over confine too.
	{"guard", "the namespaces, /proc, Landlock+seccomp and the guard against new repositories"},
}

// stepBase is the step a step's increment is taken over, where it is not
// the one before it.
var stepBase = map[string]string{"protect": "confine", "guard": "confine"}

// stepsNote is printed when the steps could not be timed; the bench goes
// on without them.
func stepsNote(format string, args ...any) {
	fmt.Printf("bench: sandbox steps not timed: "+format+"\n", args...)
}

// sandboxStepCosts times what each step of a sandboxed run's start adds
// (the confine package's TestRunInitSteps: /bin/true started by the run's
// init directly, no plugin, no spawner round trip). Each figure is a whole
// run, from making its init to its end: a spawner pays the init, its
// namespaces, its /proc and its command's confinement ahead of the run,
// off the command's path, so these are what a run costs the machine, not
// what it adds to a command's latency (sandbox_true_latency_ratio says
// that). It prints each step's
// median as an informational figure noting its increment over the step
// before, and returns those figures. A step the machine cannot take is
// reported as skipped; a test that is skipped or fails is reported, never
// an error of the bench.
func sandboxStepCosts(ctx context.Context) []figure {
	gomod, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	if err != nil || strings.TrimSpace(string(gomod)) == "" || strings.TrimSpace(string(gomod)) == os.DevNull {
		stepsNote("not in the dsh-host module (go env GOMOD: %q, %v)", strings.TrimSpace(string(gomod)), err)
		return nil
	}
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestRunInitSteps$", "-v", sandboxStepPkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DSH_BENCH_STEPS="+strconv.Itoa(stepRuns))
	out, err := cmd.CombinedOutput()

	medians := map[string]float64{}
	skipped := map[string]string{}
	var logs, lastLines []string
	testSkipped := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "STEP":
			if v, perr := strconv.ParseFloat(f[2], 64); perr == nil {
				medians[f[1]] = v
			}
		case len(f) >= 2 && f[0] == "STEP-SKIPPED":
			skipped[f[1]] = strings.Join(f[2:], " ")
		case strings.HasPrefix(line, "--- SKIP: TestRunInitSteps"):
			testSkipped = true
		case strings.HasPrefix(line, "    "):
			// The test's log (a skip's reason): `    file_test.go:NN: why`.
			why := strings.TrimSpace(line)
			if _, after, ok := strings.Cut(why, ": "); ok {
				why = after
			}
			logs = append(logs, why)
		}
		if strings.TrimSpace(line) != "" {
			lastLines = append(lastLines, strings.TrimSpace(line))
		}
	}
	switch {
	case err != nil:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stepsNote("go test %s failed (%v): %s", sandboxStepPkg, err, strings.Join(tail(lastLines, 4), " | "))
		} else {
			stepsNote("go test %s: %v", sandboxStepPkg, err)
		}
		return nil
	case testSkipped:
		stepsNote("TestRunInitSteps was skipped: %s", strings.Join(logs, "; "))
		return nil
	case len(medians) == 0:
		stepsNote("TestRunInitSteps printed no STEP lines: %s", strings.Join(tail(lastLines, 4), " | "))
		return nil
	}

	var fs []figure
	prev := ""
	for _, s := range sandboxSteps {
		v, ok := medians[s.name]
		if !ok {
			why := skipped[s.name]
			if why == "" {
				why = "not reported"
			}
			fmt.Printf("bench: sandbox_step_%s_median skipped: %s\n", s.name, why)
			continue
		}
		f := figure{name: "sandbox_step_" + s.name + "_median", value: v, unit: "ms", op: ">=", bound: 0}
		note := "(" + s.with + ")"
		if base, ok := stepBase[s.name]; ok {
			if _, measured := medians[base]; measured {
				prev = base
			}
		}
		if prev != "" {
			with := ""
			for _, p := range sandboxSteps {
				if p.name == prev {
					with = p.with
				}
			}
			note = fmt.Sprintf("(%+.2f ms over %s)", v-medians[prev], with)
		}
		fmt.Println(f.String() + " " + note)
		fs = append(fs, f)
		prev = s.name
	}
	return fs
}

func tail(xs []string, n int) []string {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}
