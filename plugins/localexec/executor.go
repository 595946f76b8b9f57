package localexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Config says what makes one executor different from another.
type Config struct {
	// Name and Version are what Describe reports.
	Name    string
	Version string
	// Shell is the executable commands run under, looked up on PATH at each
	// run ("bash").
	Shell string
	// Argv turns a command into the arguments after the shell executable
	// (for bash: "-c", command).
	Argv func(command string) []string
	// MaxArgBytes is the longest string one argument or environment entry
	// may be; zero means Linux's MAX_ARG_STRLEN less its NUL, 131071.
	MaxArgBytes int
	// SettingsSchema is the JSON Schema of the executor's settings section.
	SettingsSchema string
	// Defaults are the executor's settings before Configure; zero fields
	// take DefaultSettings.
	Defaults Settings
	// Sandbox, when set, confines every command (bash-sandbox).
	Sandbox Sandbox
	// Launcher, when set, starts every command that no Sandbox confines
	// (a container's agent, under its guard); else ForkLauncher.
	Launcher Launcher
	// Interactive says the executor offers terminals and input to running
	// processes (Description.Terminals and Input): its launcher honours
	// Launch.Terminal (a Sandbox's launchers too: for a confined command,
	// a TerminalMaker). Without it Resolve refuses both.
	Interactive bool
}

// Executor is a pluginapi.ShellExecutor running commands as local processes.
type Executor struct {
	cfg Config

	reaper *reaper
	spills spillDirState

	mu      sync.Mutex
	current Settings
	// shell overrides cfg.Shell once SetShell was called.
	shell string
	// found is where the last lookup found which shell.
	found  struct{ name, path string }
	closed bool
	// active counts runs and background processes; Close waits for it.
	active sync.WaitGroup
	// stops interrupt what is active when the executor closes.
	stops map[int]func(error)
	next  int
}

var (
	_ pluginapi.ShellExecutor = (*Executor)(nil)
	_ pluginapi.LiveRunner    = (*Executor)(nil)
	_ pluginapi.Configurable  = (*Executor)(nil)
)

// New returns an Executor for cfg.
func New(cfg Config) *Executor {
	if cfg.MaxArgBytes <= 0 {
		cfg.MaxArgBytes = 128<<10 - 1
	}
	return &Executor{
		cfg:     cfg,
		reaper:  newReaper(),
		current: cfg.Defaults.withDefaults(),
		stops:   map[int]func(error){},
	}
}

// Describe reports the executor's name, version, platform and settings.
func (e *Executor) Describe(ctx context.Context) (pluginapi.Description, error) {
	var mode pluginapi.SandboxMode
	var uncontained []string
	// Unconfined, the commands write wherever this user may; a sandbox
	// says its own reach (an older one that does not is left undeclared).
	reach := pluginapi.HostReach{Kind: pluginapi.ReachUser}
	if e.cfg.Sandbox != nil {
		mode, uncontained = e.cfg.Sandbox.DefaultMode(), e.cfg.Sandbox.Uncontained()
		reach = pluginapi.HostReach{}
		if r, ok := e.cfg.Sandbox.(Reacher); ok {
			reach = r.Reach()
		}
	}
	return pluginapi.Description{
		SandboxMode:       mode,
		Name:              e.cfg.Name,
		Version:           e.cfg.Version,
		Platform:          runtime.GOOS + "/" + runtime.GOARCH,
		SettingsNamespace: pluginapi.SettingsNamespace,
		SettingsSchema:    e.cfg.SettingsSchema,
		Services:          []string{pluginapi.ServiceShell},
		Uncontained:       uncontained,
		Shell:             e.cfg.Shell,
		Reach:             reach,
		Terminals:         e.interactive() && terminalsHere,
		Input:             e.interactive(),
	}, nil
}

// interactive says whether the executor offers terminals and input: its
// configuration asks for them.
func (e *Executor) interactive() bool { return e.cfg.Interactive }

// track registers something Close must interrupt and await. It fails once
// the executor is closed.
func (e *Executor) track(stop func(error)) (untrack func(), err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, pluginapi.ErrExecutorClosed
	}
	id := e.next
	e.next++
	e.stops[id] = stop
	e.active.Add(1)
	return func() {
		e.mu.Lock()
		delete(e.stops, id)
		e.mu.Unlock()
		e.active.Done()
	}, nil
}

// errClosing is the cause given to what Close interrupts.
var errClosing = fmt.Errorf("executor closing")

// Close interrupts every foreground run and background process, and waits
// until all of them have finished or ctx is done. Safe to call twice.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	stops := make([]func(error), 0, len(e.stops))
	for _, s := range e.stops {
		stops = append(stops, s)
	}
	e.mu.Unlock()
	for _, s := range stops {
		s(errClosing)
	}
	done := make(chan struct{})
	var spillErr error
	go func() {
		e.active.Wait()
		var sandboxErr error
		if e.cfg.Sandbox != nil {
			// Its spawners first: they are children of this process that
			// no command claimed, which killAll would kill.
			sandboxErr = e.cfg.Sandbox.Close()
		}
		e.reaper.killAll() // orphans no command claimed
		spillErr = errors.Join(e.removeSpillDir(), sandboxErr)
		close(done)
	}()
	select {
	case <-done:
		return spillErr
	case <-ctx.Done():
		return fmt.Errorf("localexec: close: %w", ctx.Err())
	}
}

// shellPath finds the shell executable, or says why it cannot.
func (e *Executor) shellPath() (string, error) {
	e.mu.Lock()
	shell, found := e.shell, e.found
	e.mu.Unlock()
	if shell == "" {
		shell = e.cfg.Shell
	}
	// The last lookup holds while its file is still an executable one:
	// one stat, where a search of PATH costs one per directory before it.
	if found.name == shell && executable(found.path) {
		return found.path, nil
	}
	path, err := exec.LookPath(shell)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", pluginapi.ErrMissingShell, shell, err)
	}
	e.mu.Lock()
	e.found.name, e.found.path = shell, path
	e.mu.Unlock()
	return path, nil
}

// executable says whether path is a regular file with an execute bit.
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// SetShell replaces the executable commands run under (an executor whose
// settings name it); empty restores Config.Shell.
func (e *Executor) SetShell(shell string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shell = shell
}

// checkWorkdir says why dir cannot be a working directory, if it cannot.
func checkWorkdir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %v", pluginapi.ErrUnusableWorkdir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s is not a directory", pluginapi.ErrUnusableWorkdir, dir)
	}
	return nil
}
