// Package pluginapitest is the conformance suite for shell executors. Run
// puts an executor behind a real gRPC connection, with the same adapters a
// plugin and its host use, and checks every semantic of the contract as a
// table case: exit facts, signal deaths, the fused deadline (timeout and
// abort, never both), infrastructure errors, stdin, background processes and
// their output, Kill and Close. The cases about termination check, from
// /proc, that what they started is gone: this test's /proc (through the
// PID namespace of a container on this kernel), or, for commands that run
// elsewhere (Options.Elsewhere), the /proc where they run, read by probe
// commands through a second executor of the same kind.
//
// A failing case says what the executor must do, and leaves nothing
// running: what a check finds still alive, it kills before it fails; and
// after each case, once the executor is closed, the suite kills whatever
// still carries the case's mark (a variable it sets in the test's
// environment before the factory runs, which the executor and its commands
// inherit) and fails the case naming it.
//
// An executor author calls it from a test:
//
//	func TestConformance(t *testing.T) {
//		pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor { return myexec.New() })
//	}
//
// and, to check the plugin binary itself over go-plugin (bin built from
// the executor's main), with Launch, which stops the plugin when the case
// ends:
//
//	func TestConformanceOverThePlugin(t *testing.T) {
//		pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
//			return pluginapitest.Launch(t, exec.Command(bin))
//		}, pluginapitest.Options{Remote: true})
//	}
//
// It depends on pluginapi alone.
package pluginapitest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Factory returns a fresh executor for one case. The suite closes it.
type Factory func(t *testing.T) pluginapi.ShellExecutor

// Options adjust the suite to an executor.
type Options struct {
	// Commands are the shell snippets; the zero value means POSIX.
	Commands Commands
	// Remote says the factory's executor is already across a process
	// boundary (a launched plugin binary): the suite uses it as it is
	// instead of serving it over gRPC itself. The factory must stop the
	// plugin process when the case ends (Launch does): one still running
	// after its case fails the case and is killed.
	Remote bool
	// Settings (a JSON object) are settings the executor needs to run at
	// all, such as a container executor's engine and image: the suite
	// configures them before each case, and adds them to the settings a
	// case configures (the case's keys win).
	Settings string
	// Elsewhere says the commands run where this test's /proc cannot see
	// them (another machine; a PID namespace on another kernel): the suite
	// then checks liveness and leftovers with probe commands (Commands'
	// Procs, Marked and KillAll) run there, through a witness: an executor
	// from Witness (nil: from the factory), made without the case's mark
	// and configured with Settings. The witness must see the processes of
	// the factory's executors' commands, also once those are closed (the
	// same machine and user, over SSH, for instance). A check whose
	// witness cannot look fails; it never passes unlooked.
	Elsewhere bool
	// Witness makes the witness of an Elsewhere run; nil means the factory.
	Witness Factory
	// NoWaitingForInput says the executor cannot tell when a process
	// waits for input (pluginapi.OutputRead.WaitingForInput is never set):
	// the case that checks it is skipped.
	NoWaitingForInput bool
}

// caseTimeout bounds one case.
const caseTimeout = 60 * time.Second

// env is what a case gets: the executor over the wire, the commands, and a
// context bounded by caseTimeout.
type env struct {
	t   *testing.T
	ctx context.Context
	x   pluginapi.ShellExecutor
	// impl is the executor itself, behind x's gRPC connection; nil when the
	// factory's executor is remote already.
	impl pluginapi.ShellExecutor
	sh   Commands
	// base are Options.Settings, parsed.
	base map[string]any
	// look finds the processes where the commands run.
	look looker
	// opts are the suite's options.
	opts Options
}

// both are the executor over the wire and, when the suite holds it, the
// executor itself: for the checks an adapter could answer on its behalf.
func (e *env) both() []pluginapi.ShellExecutor {
	if e.impl == nil {
		return []pluginapi.ShellExecutor{e.x}
	}
	return []pluginapi.ShellExecutor{e.x, e.impl}
}

type suiteCase struct {
	name string
	run  func(e *env)
}

// Run checks the executor the factory makes against every case, over gRPC.
func Run(t *testing.T, factory Factory) {
	RunWith(t, factory, Options{})
}

// RunWith is Run with options.
func RunWith(t *testing.T, factory Factory, opts Options) {
	sh := opts.Commands
	if sh.Exit == nil {
		sh = POSIX
	}
	for k, v := range inheritedEnv {
		t.Setenv(k, v)
	}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			// Registered first, the sweep runs last: after the
			// executor's Close and the factory's own cleanups.
			mark := newCaseMark()
			t.Setenv(caseMarkVar, mark)
			var look looker = hostLook{}
			if opts.Elsewhere {
				w := &witnessLook{t: t, make: opts.Witness, sh: sh, base: []byte(opts.Settings), mark: mark}
				if w.make == nil {
					w.make = factory
				}
				t.Cleanup(func() {
					defer w.done()
					sweepCase(t, caseMarkVar+"="+mark, w, hostLook{})
				})
				look = w
			} else {
				t.Cleanup(func() { sweepCase(t, caseMarkVar+"="+mark, look) })
			}
			impl := factory(t)
			x, local := impl, pluginapi.ShellExecutor(nil)
			if !opts.Remote {
				x, local = Serve(t, impl), impl
			} else {
				t.Cleanup(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					if err := impl.Close(ctx); err != nil {
						t.Errorf("Close: %v", err)
					}
				})
			}
			ctx, cancel := context.WithTimeout(context.Background(), caseTimeout)
			defer cancel()
			e := &env{t: t, ctx: ctx, x: x, impl: local, sh: sh, look: look, opts: opts}
			if opts.Settings != "" {
				if err := json.Unmarshal([]byte(opts.Settings), &e.base); err != nil {
					t.Fatalf("Options.Settings %s is not a JSON object: %v", opts.Settings, err)
				}
				applySettings(e, "{}")
			}
			c.run(e)
		})
	}
}

func cases() []suiteCase {
	var all []suiteCase
	for _, group := range [][]suiteCase{describeCases, resolveCases, settingsCases, runCases, outputCases, envCases,
		deadlineCases, terminationCases, errorCases, backgroundCases, interactiveCases} {
		all = append(all, group...)
	}
	return all
}

// workdir is a new directory for commands to run in: the test's own,
// opened to every user of the machine (0755, and its parent 0711), for an
// executor whose commands run as another user here (SSH to 127.0.0.1).
func (e *env) workdir() string {
	e.t.Helper()
	dir := e.t.TempDir()
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o755}, {filepath.Dir(dir), 0o711}} {
		if err := os.Chmod(d.path, d.mode); err != nil {
			e.t.Fatal(err)
		}
	}
	return dir
}

// resolve resolves req or fails the test.
func (e *env) resolve(req pluginapi.ExecRequest) pluginapi.ExecSpec {
	e.t.Helper()
	spec, err := e.x.Resolve(e.ctx, req)
	if err != nil {
		e.t.Fatalf("Resolve must accept a plain request (%q): %v", req.Command, err)
	}
	return spec
}

// run resolves and runs command, failing the test on an error.
func (e *env) run(req pluginapi.ExecRequest) pluginapi.RunResult {
	e.t.Helper()
	res, err := e.x.Run(e.ctx, e.resolve(req))
	if err != nil {
		e.t.Fatalf("Run must return an error only when the command could not run; Run(%q): %v", req.Command, err)
	}
	return res
}

// finished starts command in the background, waits for it to finish, and
// reads its output once, failing the test on an error.
func (e *env) finished(command string) (pluginapi.ShellProcess, pluginapi.OutputRead) {
	e.t.Helper()
	p, err := e.x.Start(e.ctx, e.resolve(pluginapi.ExecRequest{Command: command}))
	if err != nil {
		e.t.Fatalf("Start must return a handle at once; an error only when nothing could be started: %v", err)
	}
	if _, err := p.Wait(e.ctx); err != nil {
		e.t.Fatalf("Wait must settle with the process's exit, not an error: %v", err)
	}
	r, err := p.ReadOutput(e.ctx)
	if err != nil {
		e.t.Fatalf("ReadOutput of a known process must not fail: %v", err)
	}
	return p, r
}

// exitCode is the result's exit code, failing the test when there is none.
func exitCode(t *testing.T, res pluginapi.RunResult) int {
	t.Helper()
	if res.ExitCode == nil {
		t.Fatalf("a command that exits by itself must settle with its exit code; got none (signal %q): %+v", res.Signal, res)
	}
	return *res.ExitCode
}
