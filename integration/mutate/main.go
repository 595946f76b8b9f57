// Command mutate runs mutation testing (gremlins) over the packages where a
// surviving mutant means a broken promise, and prints, per package, the test
// efficacy (killed of killed+lived mutants), the mutant coverage (mutants
// some test reaches, of all) and every mutant that lived, with its line.
//
// Each package is tested by the tests that hold it to its promises, not
// only its own: gremlins runs in integration mode with the coverage counted
// for that package alone, and a small stand-in for the go command narrows
// gremlins' `go test ./...` to those tests (the conformance suite run on
// bash-local counts for pluginapi and localexec), so a mutant costs one run
// of them, not of the whole module. CI=true is set: a test that would skip
// for want of something fails instead, so a mutant cannot live by a skip.
//
//	go run ./integration/mutate -gremlins .tools/gremlins [-only PKG] [-files REGEXP] [-workers N]
//
// It is slow (tens of minutes on two cores, hours for host and localexec):
// run it after changing a package's tests or the code they hold, not on
// every change. -files mutates only the files (of PKG's directory) whose
// name matches, so that a package's run can be split across sittings; the
// efficacy it prints is then that of those files alone.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// target is one package under mutation and the tests that hold it.
type target struct {
	pkg     string   // the package's directory, from the module root
	tests   []string // the packages whose tests count for it
	exclude string   // a regexp of its files not to mutate (relative to pkg), or ""
}

// targets are the packages issue 14 names: a lived mutant in them is a
// promise no test holds.
var targets = []target{
	{pkg: "pluginapi", tests: []string{"./pluginapi/...", "./plugins/bash-local"}, exclude: `^(proto|pluginapitest)/`},
	{pkg: "registry", tests: []string{"./registry"}},
	// registry.CheckBinary's placement check, which the container
	// executor's agent shares; registry's tests hold it.
	{pkg: "internal/binarytrust", tests: []string{"./registry"}},
	{pkg: "host", tests: []string{"./host"}},
	{pkg: "plugins/localexec", tests: []string{"./plugins/localexec", "./plugins/bash-local"}},
	// The sandbox's package tests: its mechanics run in spawned processes,
	// which gremlins' coverage does not see, and bash-sandbox's suite takes
	// minutes a mutant.
	{pkg: "plugins/bash-sandbox/confine", tests: []string{"./plugins/bash-sandbox/confine"}},
}

// minEfficacy is the efficacy each package must reach.
const minEfficacy = 90.0

// goStandIn is the go command gremlins finds first on PATH: `go test`'s
// whole-module pattern becomes the tests of the package under mutation.
// Each go test runs in a session of its own: a mutant of the code that
// kills process groups (killGroup's guard negated makes it kill group 0,
// the caller's own) then kills its own test, not gremlins and this run.
// A go test killed by a signal exits 1 here, a failure: gremlins counts
// only status 1 as a killed mutant, and any other as one that lived. An
// INT, TERM or HUP to the stand-in (an interrupted run) kills the session.
// Gremlins' own timeout SIGKILLs the stand-in alone, which cannot pass it
// on: that go test then ends at its -timeout, which gremlins sets a little
// past its own.
const goStandIn = `#!/bin/sh
# Written by integration/mutate: gremlins' "go test ... ./..." tests
# $MUTATE_TESTS instead, in a session of its own, killed with the stand-in
# on INT, TERM or HUP; a go test killed by a signal fails (status 1); every
# other use of go passes through.
if [ "$1" = test ]; then
	shift
	for a in "$@"; do
		shift
		if [ "$a" = ./... ]; then
			set -- "$@" $MUTATE_TESTS
		else
			set -- "$@" "$a"
		fi
	done
	# Not a group leader, the child's setsid does not fork: its pid is
	# its session's and group's id.
	setsid "$MUTATE_REAL_GO" test "$@" &
	pid=$!
	# (its group, or itself if it has not called setsid yet)
	trap 'kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid"' INT TERM HUP
	wait "$pid"
	status=$?
	while kill -0 "$pid" 2>/dev/null; do # a trap interrupted the wait
		wait "$pid"
		status=$?
	done
	if [ "$status" -gt 128 ]; then
		exit 1
	fi
	exit "$status"
fi
exec "$MUTATE_REAL_GO" "$@"
`

// report is the part of gremlins' JSON output read here.
type report struct {
	Efficacy   float64 `json:"test_efficacy"`
	Coverage   float64 `json:"mutations_coverage"`
	Total      int     `json:"mutants_total"`
	Killed     int     `json:"mutants_killed"`
	Lived      int     `json:"mutants_lived"`
	NotCovered int     `json:"mutants_not_covered"`
	NotViable  int     `json:"mutants_not_viable"`
	Files      []struct {
		Name      string `json:"file_name"`
		Mutations []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
			Line   int    `json:"line"`
			Column int    `json:"column"`
		} `json:"mutations"`
	} `json:"files"`
}

func main() {
	gremlins := flag.String("gremlins", ".tools/gremlins", "the gremlins binary")
	only := flag.String("only", "", "mutate only this package (a directory from the module root)")
	workers := flag.Int("workers", max(runtime.NumCPU()/2, 1), "mutants tested at once")
	files := flag.String("files", "", "mutate only the files whose name matches this regexp (with -only)")
	flag.Parse()
	var include *regexp.Regexp
	if *files != "" {
		var err error
		if include, err = regexp.Compile(*files); err != nil {
			fmt.Fprintln(os.Stderr, "mutate: -files:", err)
			os.Exit(2)
		}
		if *only == "" {
			fmt.Fprintln(os.Stderr, "mutate: -files needs -only PKG")
			os.Exit(2)
		}
	}
	if err := run(*gremlins, *only, include, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(1)
	}
}

func run(gremlins, only string, include *regexp.Regexp, workers int) error {
	bin, err := filepath.Abs(gremlins)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no gremlins at %s (make mutate installs it): %w", gremlins, err)
	}
	realGo, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		return fmt.Errorf("the tests of each mutant run under setsid (util-linux): %w", err)
	}
	stand, err := os.MkdirTemp("", "dsh-mutate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stand)
	if err := os.WriteFile(filepath.Join(stand, "go"), []byte(goStandIn), 0o755); err != nil {
		return err
	}

	missed := 0
	ran := 0
	for _, t := range targets {
		if only != "" && filepath.Clean(only) != t.pkg {
			continue
		}
		ran++
		out := filepath.Join(stand, strings.ReplaceAll(t.pkg, "/", "_")+".json")
		// A mutant that hangs the tests is given three times the clean
		// run's time (gremlins' default, five, spends minutes on each).
		args := []string{"unleash", "--integration", "--coverpkg", "./" + t.pkg,
			"--workers", fmt.Sprint(workers), "--timeout-coefficient", "3",
			"--output", out, "--output-statuses", "klt"}
		if t.exclude != "" {
			args = append(args, "--exclude-files", t.exclude)
		}
		if include != nil {
			others, err := otherFiles(t.pkg, include)
			if err != nil {
				return err
			}
			for _, name := range others {
				args = append(args, "--exclude-files", "^"+regexp.QuoteMeta(name)+"$")
			}
		}
		cmd := exec.Command(bin, append(args, "./"+t.pkg)...)
		cmd.Env = append(os.Environ(),
			"PATH="+stand+string(os.PathListSeparator)+os.Getenv("PATH"),
			"MUTATE_REAL_GO="+realGo,
			"MUTATE_TESTS="+strings.Join(t.tests, " "),
			"CI=true")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		fmt.Fprintf(os.Stderr, "mutate: %s, tested by %s\n", t.pkg, strings.Join(t.tests, " "))
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("gremlins on %s: %w", t.pkg, err)
		}
		r, err := readReport(out)
		if err != nil {
			return fmt.Errorf("gremlins on %s: %w", t.pkg, err)
		}
		if !printReport(t.pkg, r) {
			missed++
		}
	}
	if ran == 0 {
		return fmt.Errorf("no package %q among those mutated", only)
	}
	if missed > 0 {
		return fmt.Errorf("%d of %d packages below %.0f%% efficacy", missed, ran, minEfficacy)
	}
	return nil
}

// otherFiles are the Go files of pkg's directory (tests aside) whose name
// include does not match.
func otherFiles(pkg string, include *regexp.Regexp) ([]string, error) {
	entries, err := os.ReadDir(pkg)
	if err != nil {
		return nil, err
	}
	var out []string
	matched := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if include.MatchString(name) {
			matched++
			continue
		}
		out = append(out, name)
	}
	if matched == 0 {
		return nil, fmt.Errorf("-files %q matches no file of %s", include, pkg)
	}
	return out, nil
}

func readReport(path string) (report, error) {
	var r report
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("reading %s: %w", path, err)
	}
	return r, nil
}

// printReport prints a package's figures and its lived mutants, and reports
// whether it reached minEfficacy.
func printReport(pkg string, r report) bool {
	ok := r.Killed+r.Lived > 0 && r.Efficacy >= minEfficacy
	verdict := "ok"
	if !ok {
		verdict = "MISS"
	}
	timedOut := 0
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			if m.Status == "TIMED OUT" {
				timedOut++
			}
		}
	}
	fmt.Printf("mutate %s efficacy %.2f%% (%d killed, %d lived; %d timed out, counted as neither) target >= %.0f%% %s\n",
		pkg, r.Efficacy, r.Killed, r.Lived, timedOut, minEfficacy, verdict)
	fmt.Printf("mutate %s mutant_coverage %.2f%% (%d mutants no test reaches; %d not viable)\n",
		pkg, r.Coverage, r.NotCovered, r.NotViable)
	for _, f := range r.Files {
		for _, m := range f.Mutations {
			if m.Status != "LIVED" {
				continue
			}
			file := filepath.Join(pkg, f.Name)
			fmt.Printf("  lived %s:%d:%d %s: %s\n", file, m.Line, m.Column, m.Type, sourceLine(file, m.Line))
		}
	}
	return ok
}

// sourceLine is line n of file, trimmed, or "" when it cannot be read.
func sourceLine(file string, n int) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 1; sc.Scan(); i++ {
		if i == n {
			return strings.TrimSpace(sc.Text())
		}
	}
	return ""
}
