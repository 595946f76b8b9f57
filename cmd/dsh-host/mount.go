package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/plugins/builtins"
	"github.com/dsh-host/dsh-host/registry"
)

// errUsage marks an error in what the user asked for, as opposed to a
// failure to do it: the command exits 2, not 125.
var errUsage = errors.New("usage")

// mountFlags are the flags every command that mounts an executor takes.
type mountFlags struct {
	executors executorList
	settings  string
	pluginDir string // --plugin-dir
	spillDir  string
	// workdir is where commands run: run's --workdir; empty means the
	// current directory.
	workdir string
}

// register defines the flags on fs; executorHelp describes --executor.
func (f *mountFlags) register(fs *flag.FlagSet, executorHelp string) {
	fs.Var(&f.executors, "executor", executorHelp)
	fs.StringVar(&f.settings, "settings", "", "the settings `FILE` (default: $DSH_SETTINGS)")
	fs.StringVar(&f.pluginDir, "plugin-dir", "", "the `DIR` of dsh-executor-NAME binaries that executor names are looked up in (default: the settings' host.pluginDir, else $DSH_PLUGIN_DIR, else plugins/ beside dsh-host); it must exist")
}

// settingsPath is --settings, or $DSH_SETTINGS.
func (f *mountFlags) settingsPath() string {
	if f.settings != "" {
		return f.settings
	}
	return os.Getenv("DSH_SETTINGS")
}

// mount loads the settings file (if any), resolves the executors (flags
// first, then the file's host.executor, then the default), mounts them, and
// hands the shell executor the file's shell section, checked against its
// schema. On error nothing is left running.
func (f *mountFlags) mount(ctx context.Context) (*host.Mounted, *host.SettingsFile, error) {
	file, execs, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	roots, err := f.writableRoots(file)
	if err != nil {
		return nil, nil, err
	}
	opts := host.Options{Logger: cliLogger(), WritableRoots: roots}
	if f.spillDir != "" {
		abs, err := filepath.Abs(f.spillDir)
		if err == nil {
			err = os.MkdirAll(abs, 0o700)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--spill-dir: %w", err)
		}
		opts.SpillDir = abs
	}
	m, err := host.Mount(ctx, execs, opts)
	if err != nil {
		return nil, nil, err
	}
	if file != nil {
		shell := m.Shell()
		section, err := file.ShellSettings(shell.Description())
		if err == nil {
			err = shell.Configure(ctx, section)
		}
		if err != nil {
			_ = m.Close(context.WithoutCancel(ctx))
			return nil, nil, err
		}
	}
	return m, file, nil
}

// writableRoots are the directories commands may write beneath, where no
// executor binary may lie unless pinned: the workdir (the current directory
// when none is given: the executor's default) and the settings file's
// sandbox.writableRoots. Each is absolute; the host resolves their links.
func (f *mountFlags) writableRoots(file *host.SettingsFile) ([]string, error) {
	workdir, err := filepath.Abs(cmp.Or(f.workdir, "."))
	if err != nil {
		return nil, fmt.Errorf("the workdir: %w", err)
	}
	roots := []string{workdir}
	if file != nil {
		more, err := file.SandboxWritableRoots()
		if err != nil {
			return nil, err
		}
		for _, r := range more {
			if abs, err := filepath.Abs(r); err == nil {
				roots = append(roots, abs)
			}
		}
	}
	return roots, nil
}

// load reads the settings file (if any) and resolves the executors: the
// flags first, then the file's host.executor, then the default.
func (f *mountFlags) load() (*host.SettingsFile, []host.Executor, error) {
	var file *host.SettingsFile
	if path := f.settingsPath(); path != "" {
		var err error
		if file, err = host.LoadSettingsFile(path); err != nil {
			return nil, nil, err
		}
	}
	dir := choosePluginDir(f.pluginDir, file)
	if err := dir.check(); err != nil {
		return nil, nil, err
	}
	names := f.executors
	if len(names) == 0 && file != nil {
		names = executorList(file.Host.Executor)
	}
	if len(names) == 0 {
		names = executorList{defaultExecutor}
	}
	var execs []host.Executor
	for _, name := range names {
		ex, err := resolveExecutor(name, dir.dir, file)
		if errors.Is(err, host.ErrSettings) || errors.Is(err, registry.ErrChecksumMismatch) {
			return nil, nil, err // the file's or the binary's fault, not the command line's
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		execs = append(execs, ex)
	}
	if err := checkPinsApply(file, execs, dir.dir); err != nil {
		return nil, nil, err
	}
	return file, execs, nil
}

// resolveAgain resolves the executor mounted as name with the settings
// file read again: a reload takes the pins the file holds by then (a
// rebuilt binary with its new pin is taken; one without is refused, naming
// both hashes).
func (f *mountFlags) resolveAgain(name string) (host.Executor, error) {
	var file *host.SettingsFile
	if path := f.settingsPath(); path != "" {
		var err error
		if file, err = host.LoadSettingsFile(path); err != nil {
			return host.Executor{}, err
		}
	}
	return resolveExecutor(name, choosePluginDir(f.pluginDir, file).dir, file)
}

// resolveExecutor reads an executor's name: a built-in one, a path to a
// plugin binary, or a name in the plugin directory, each checked against
// the settings' checksum for it, when there is one (for a path: see
// pathChecksum). A checksum pins the binary: the host checks it at every
// launch, and runs the binary even where others could replace it.
func resolveExecutor(name, dir string, file *host.SettingsFile) (host.Executor, error) {
	if builtins.Has(name) {
		if file != nil && file.Host.Checksums[name] != "" {
			// The pin was meant for a binary, and would silently pin
			// nothing: the built-in runs this very binary.
			return host.Executor{}, fmt.Errorf("%w: %s: host.checksums.%s: %s is built in: it runs dsh-host itself, which a pin does not cover (a pin by this name applies to a plugin binary named %s%s given by its path)",
				host.ErrSettings, file.ChecksumOrigin(name), name, name, registry.ExecutorPrefix, name)
		}
		return host.BuiltinExecutor(name)
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		if err := checkBinaryPath(name); err != nil {
			return host.Executor{}, err
		}
		ex := host.Executor{Name: name, Path: name}
		if want := pathChecksum(name, file); want != "" {
			if _, err := registry.VerifyChecksum(name, want); err != nil {
				return host.Executor{}, err
			}
			ex.Checksum, _ = hexBytes(want)
		}
		return ex, nil
	}
	var want string
	if file != nil {
		want = file.Host.Checksums[name]
	}
	catalog, err := registry.Discover(dir)
	switch {
	case err == nil:
		if e, err := catalog.Lookup(name, want); err == nil {
			ex := host.Executor{Name: name, Path: e.Path}
			if want != "" {
				ex.Checksum, _ = hexBytes(want)
			}
			return ex, nil
		} else if !isNotInCatalog(err) {
			return host.Executor{}, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return host.Executor{}, err // a link out of the directory, say
	}
	return host.Executor{}, fmt.Errorf("executor %q: not built in (%s), not a path, not in %s", name, strings.Join(builtins.Names(), ", "), dir)
}

// checkBinaryPath says why the file at path, given to --executor, cannot be
// a plugin binary: it does not exist, is a directory, or cannot be read;
// the path as given, untouched.
func checkBinaryPath(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("executor %s: no such file", path)
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, as given
		}
		return fmt.Errorf("executor %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("executor %s: a directory, not a plugin binary", path)
	}
	return nil
}

// pathChecksum is the checksum the settings require of the plugin binary at
// path, "" for none: host.checksums keyed by the path as given, by its
// absolute form or by its target, else by the executor's name when the file
// is named dsh-executor-NAME.
func pathChecksum(path string, file *host.SettingsFile) string {
	if file == nil || len(file.Host.Checksums) == 0 {
		return ""
	}
	keys := []string{path}
	if abs, err := filepath.Abs(path); err == nil {
		keys = append(keys, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			keys = append(keys, real)
		}
	}
	if name, ok := strings.CutPrefix(filepath.Base(path), registry.ExecutorPrefix); ok && name != "" {
		keys = append(keys, name)
	}
	for _, k := range keys {
		if want := file.Host.Checksums[k]; want != "" {
			return want
		}
	}
	return ""
}
