package host

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/dsh-host/dsh-host/internal/layout"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/registry"
)

// Setup says which executors to mount and how, the way dsh-host's command
// line does: executor names or paths, a settings file, a plugin directory.
// Load resolves it (names, the plugin directory, checksum pins); Mount and
// StartRuntime launch what it resolved and hand the shell executor the
// settings file's shell section.
type Setup struct {
	// Executors are names or paths of executors to mount; empty means the
	// settings file's host.executor, else DefaultExecutor. A name is a
	// built-in executor (Builtins), else a dsh-executor-NAME binary of the
	// plugin directory; a name with a path separator is a plugin binary's
	// path.
	Executors       []string
	DefaultExecutor string
	// Builtins are the executors this program serves itself, re-executed
	// as a plugin (builtins.Names(), when its main calls
	// builtins.ServeIfAsked).
	Builtins []string
	// SettingsPath is the settings file; "" means $DSH_SETTINGS, and none
	// when that is unset.
	SettingsPath string
	// PluginDir is the directory of dsh-executor-NAME binaries; "" means
	// the settings file's host.pluginDir, else $DSH_PLUGIN_DIR, else
	// plugins/ beside this program. A directory named so must exist.
	PluginDir string
	// PluginDirSource names PluginDir in messages ("--plugin-dir", say);
	// "" means "PluginDir".
	PluginDirSource string
	// Workdir is where commands run ("" is the current directory): a
	// writable root, with the settings file's sandbox.writableRoots.
	Workdir string
	// Sections are the JSON Schemas of further sections of the settings
	// file this program takes (dsh-host's mcp section, say), by name: Load
	// checks each, whatever the command, so a file one command refuses is
	// refused by all.
	Sections map[string]string
	// SpillDir, when set, is made (0700) and kept for spill files: see
	// Options.SpillDir.
	SpillDir string
	// SandboxPolicy is the sandbox policy, typed, for a settings file
	// without a sandbox section: see Options.SandboxPolicy.
	SandboxPolicy *pluginapi.SandboxPolicy
	// Logger and PluginLogger are as in Options.
	Logger, PluginLogger hclog.Logger
}

// CallerError is a failure of what the Setup itself asked for, rather
// than of the settings file or a binary: an executor name that resolves to
// nothing, a path that is no plugin binary, a PluginDir that is not there.
// A command line reports it as a usage error.
type CallerError struct{ Err error }

func (e *CallerError) Error() string { return e.Err.Error() }
func (e *CallerError) Unwrap() error { return e.Err }

// Resolved is a Setup with its settings file read and its executors found.
type Resolved struct {
	Setup Setup
	// File is the settings file, nil for none.
	File      *SettingsFile
	Executors []Executor
	PluginDir PluginDir
}

// SettingsFilePath is the settings file Setup names: SettingsPath, else
// $DSH_SETTINGS; "" for none.
func (s Setup) SettingsFilePath() string {
	return cmp.Or(s.SettingsPath, os.Getenv("DSH_SETTINGS"))
}

// loadFile reads the settings file, nil when there is none.
func (s Setup) loadFile() (*SettingsFile, error) {
	if path := s.SettingsFilePath(); path != "" {
		return LoadSettingsFile(path)
	}
	return nil, nil
}

// Load reads the settings file (if any) and resolves the executors: Setup's
// first, then the file's host.executor, then DefaultExecutor. Each is
// checked against its pin in host.checksums, and a pin that names nothing
// is refused.
func (s Setup) Load() (*Resolved, error) {
	file, err := s.loadFile()
	if err != nil {
		return nil, err
	}
	dir := s.ChoosePluginDir(file)
	if err := dir.Check(); err != nil {
		return nil, err
	}
	names, _ := s.ExecutorNames(file)
	r := &Resolved{Setup: s, File: file, PluginDir: dir}
	for _, name := range names {
		ex, err := s.resolveExecutor(name, dir, file)
		if err != nil {
			if !errors.Is(err, ErrSettings) && !errors.Is(err, registry.ErrChecksumMismatch) {
				err = &CallerError{err} // not the file's or the binary's fault
			}
			return nil, err
		}
		r.Executors = append(r.Executors, ex)
	}
	if err := checkPinsApply(file, r.Executors, dir.Dir); err != nil {
		return nil, err
	}
	if err := r.checkSections(); err != nil {
		return nil, err
	}
	return r, nil
}

// checkSections checks the sections whose schemas do not depend on the
// executor, the same way for every caller: approval, and Setup.Sections.
// (shell and sandbox are checked against the executor's schema once it is
// mounted.)
func (r *Resolved) checkSections() error {
	if _, err := r.ApprovalPolicy(); err != nil {
		return err
	}
	if r.File == nil {
		return nil
	}
	names := make([]string, 0, len(r.Setup.Sections))
	for name := range r.Setup.Sections {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, err := r.File.Section(name, r.Setup.Sections[name]); err != nil {
			return err
		}
	}
	return nil
}

// ExecutorNames are the executors Setup mounts with file, and where they
// came from: "Executors", the file's FILE:LINE, or "default".
func (s Setup) ExecutorNames(file *SettingsFile) (names []string, from string) {
	switch {
	case len(s.Executors) > 0:
		return s.Executors, "Executors"
	case file != nil && len(file.Host.Executor) > 0:
		return file.Host.Executor, file.Origin("host", "executor")
	}
	return []string{s.DefaultExecutor}, "default"
}

// ResolveAgain resolves the executor mounted as name with the settings
// file read again: a reload takes the pins the file holds by then (a
// rebuilt binary with its new pin is taken; one without is refused, naming
// both hashes).
func (s Setup) ResolveAgain(name string) (Executor, error) {
	file, err := s.loadFile()
	if err != nil {
		return Executor{}, err
	}
	return s.resolveExecutor(name, s.ChoosePluginDir(file), file)
}

// resolveExecutor reads an executor's name: a built-in one, a path to a
// plugin binary, or a name in the plugin directory, each checked against
// the settings' checksum for it, when there is one (for a path: see
// pathChecksum). A checksum pins the binary: the host checks it at every
// launch, and runs the binary even where others could replace it. A name
// that is none of these is refused with every name that is.
func (s Setup) resolveExecutor(name string, pd PluginDir, file *SettingsFile) (Executor, error) {
	dir := pd.Dir
	if slices.Contains(s.Builtins, name) {
		if file != nil && file.Host.Checksums[name] != "" {
			// The pin was meant for a binary, and would silently pin
			// nothing: the built-in runs this very binary.
			return Executor{}, fmt.Errorf("%w: %s: host.checksums.%s: %s is built in: it runs dsh-host itself, which a pin does not cover (a pin by this name applies to a plugin binary named %s%s given by its path)",
				ErrSettings, file.ChecksumOrigin(name), name, name, registry.ExecutorPrefix, name)
		}
		return BuiltinExecutor(name)
	}
	if strings.ContainsRune(name, os.PathSeparator) {
		if err := checkBinaryPath(name); err != nil {
			return Executor{}, err
		}
		ex := Executor{Name: name, Path: name}
		if want := pathChecksum(name, file); want != "" {
			if _, err := registry.VerifyChecksum(name, want); err != nil {
				return Executor{}, err
			}
			ex.Checksum, _ = hex.DecodeString(want)
		}
		return ex, nil
	}
	var want string
	if file != nil {
		want = file.Host.Checksums[name]
	}
	catalog, err := registry.Discover(dir)
	held := "which does not exist"
	switch {
	case err == nil:
		held = "which holds no " + registry.ExecutorPrefix + "NAME binary"
		if names := catalogNames(catalog); len(names) > 0 {
			held = "which holds " + strings.Join(names, ", ")
		}
		e, err := catalog.Lookup(name, want)
		if err == nil {
			ex := Executor{Name: name, Path: e.Path}
			if want != "" {
				ex.Checksum, _ = hex.DecodeString(want)
			}
			return ex, nil
		}
		if !errors.Is(err, registry.ErrNotInCatalog) {
			return Executor{}, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Executor{}, err // a link out of the directory, say
	}
	return Executor{}, fmt.Errorf("executor %q: not built in (%s), not a path, not in %s (the plugin directory, %s), %s",
		name, strings.Join(s.Builtins, ", "), dir, pd.From, held)
}

// catalogNames are the names of c's executors, by name.
func catalogNames(c *registry.Catalog) []string {
	var names []string
	for _, e := range c.Entries() {
		names = append(names, e.Name)
	}
	return names
}

// checkBinaryPath says why the file at path cannot be a plugin binary: it
// does not exist, is a directory, or cannot be read; the path as given.
func checkBinaryPath(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("executor %s: no such file", path)
	case err != nil:
		return fmt.Errorf("executor %s: %w", path, pathlessErr(err))
	case fi.IsDir():
		return fmt.Errorf("executor %s: a directory, not a plugin binary", path)
	}
	return nil
}

// pathlessErr is err without the path a *fs.PathError names, for a message
// that says the path once, as given.
func pathlessErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// pathChecksum is the checksum the settings require of the plugin binary at
// path, "" for none: host.checksums keyed by the path as given, by its
// absolute form or by its target, else by the executor's name when the file
// is named dsh-executor-NAME.
func pathChecksum(path string, file *SettingsFile) string {
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

// checkPinsApply refuses a pin in host.checksums that names nothing here:
// a path key with no file there, or a name key that is neither a plugin
// in dir nor the name of an executor mounted by its path
// (dsh-executor-NAME). A typo in a pin would otherwise pin nothing, and
// say nothing.
func checkPinsApply(file *SettingsFile, mounted []Executor, dir string) error {
	if file == nil || len(file.Host.Checksums) == 0 {
		return nil
	}
	keys := make([]string, 0, len(file.Host.Checksums))
	for k := range file.Host.Checksums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var inDir map[string]bool
	for _, k := range keys {
		if strings.ContainsRune(k, os.PathSeparator) {
			if fi, err := os.Stat(k); err != nil || fi.IsDir() {
				return fmt.Errorf("%w: %s: host.checksums.%s: names no plugin binary (no such file)", ErrSettings, file.ChecksumOrigin(k), k)
			}
			continue
		}
		if mountedByPath(k, mounted) {
			continue
		}
		if inDir == nil {
			inDir = map[string]bool{}
			if catalog, err := registry.Discover(dir); err == nil {
				for _, e := range catalog.Entries() {
					inDir[e.Name] = true
				}
			}
		}
		if !inDir[k] {
			return fmt.Errorf("%w: %s: host.checksums.%s: names nothing: no plugin %s in %s, and no executor mounted here is a path to %s%s (key a pin of a binary elsewhere by its path)",
				ErrSettings, file.ChecksumOrigin(k), k, k, dir, registry.ExecutorPrefix, k)
		}
	}
	return nil
}

// mountedByPath says whether an executor mounted by its path is the plugin
// named name (its file dsh-executor-NAME).
func mountedByPath(name string, mounted []Executor) bool {
	return slices.ContainsFunc(mounted, func(ex Executor) bool {
		return !ex.Builtin && ex.Path != "" && filepath.Base(ex.Path) == registry.ExecutorPrefix+name
	})
}

// PluginDir is the directory of dsh-executor-NAME binaries a name is looked
// up in, and where that choice came from.
type PluginDir struct {
	Dir string
	// From is Setup.PluginDirSource, "$DSH_PLUGIN_DIR", the settings
	// file's FILE:LINE, or "default" (plugins/ beside this program).
	From string
	// kind is how a problem with it is reported.
	kind pluginDirKind
}

type pluginDirKind int

const (
	dirDefault pluginDirKind = iota
	dirCaller
	dirEnv
	dirSettings
)

// Given is whether someone named the directory: then it must exist. The
// default one need not (a program without `make build`'s plugins).
func (p PluginDir) Given() bool { return p.kind != dirDefault }

// ChoosePluginDir picks the plugin directory: Setup.PluginDir first, then
// the settings file's host.pluginDir, then $DSH_PLUGIN_DIR, then plugins/
// beside this program.
func (s Setup) ChoosePluginDir(file *SettingsFile) PluginDir {
	switch {
	case s.PluginDir != "":
		return PluginDir{s.PluginDir, cmp.Or(s.PluginDirSource, "PluginDir"), dirCaller}
	case file != nil && file.Host.PluginDir != "":
		return PluginDir{file.Host.PluginDir, file.Origin("host", "pluginDir"), dirSettings}
	case os.Getenv("DSH_PLUGIN_DIR") != "":
		return PluginDir{os.Getenv("DSH_PLUGIN_DIR"), "$DSH_PLUGIN_DIR", dirEnv}
	}
	return PluginDir{defaultPluginDir(), "default", dirDefault}
}

// FindPluginDir is the plugin directory Load looks names up in: the
// settings file (if any) read for its host.pluginDir, and the choice
// checked (a directory someone named must exist).
func (s Setup) FindPluginDir() (PluginDir, error) {
	file, err := s.loadFile()
	if err != nil {
		return PluginDir{}, err
	}
	dir := s.ChoosePluginDir(file)
	return dir, dir.Check()
}

// defaultPluginDir is where `make build` or `make install` puts plugin
// binaries, found from the running program's location (layout.PluginDir).
func defaultPluginDir() string {
	self, err := os.Executable()
	if err != nil {
		return "plugins"
	}
	return layout.PluginDir(self)
}

// Check says why a plugin directory someone named cannot be one: it is not
// there, or not a directory. Setup's mistake is a *CallerError, the
// settings file's an ErrSettings; the path is said as given.
func (p PluginDir) Check() error {
	if !p.Given() {
		return nil
	}
	fi, err := os.Stat(p.Dir)
	var problem string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = "no such directory"
	case err != nil:
		problem = pathlessErr(err).Error()
	case !fi.IsDir():
		problem = "not a directory"
	default:
		return nil
	}
	switch p.kind {
	case dirCaller:
		return &CallerError{fmt.Errorf("%s %s: %s", p.From, p.Dir, problem)}
	case dirEnv:
		return fmt.Errorf("$DSH_PLUGIN_DIR %s: %s", p.Dir, problem)
	}
	return fmt.Errorf("%w: %s: host.pluginDir: %s: %s", ErrSettings, p.From, p.Dir, problem)
}

// Available is an executor a name can select, with its binary's SHA-256.
type Available struct {
	Executor Executor
	SHA256   string
}

// Available lists the executors names select, as Load looks them up:
// each name's copy (the built-in executors first, then dir's plugins, by
// name), and dir's plugins whose names a built-in executor takes
// (shadowed: only their paths reach them).
func (s Setup) Available(dir PluginDir) (selected, shadowed []Available, err error) {
	for _, name := range s.Builtins {
		ex, err := BuiltinExecutor(name)
		if err != nil {
			return nil, nil, err
		}
		sum, err := registry.FileSHA256(ex.Path)
		if err != nil {
			return nil, nil, err
		}
		selected = append(selected, Available{ex, sum})
	}
	if _, err := os.Stat(dir.Dir); err != nil && !dir.Given() {
		return selected, nil, nil // no plugin directory beside the program
	}
	catalog, err := registry.Discover(dir.Dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range catalog.Entries() {
		a := Available{Executor{Name: e.Name, Path: e.Path}, e.SHA256}
		if slices.Contains(s.Builtins, e.Name) {
			shadowed = append(shadowed, a)
		} else {
			selected = append(selected, a)
		}
	}
	return selected, shadowed, nil
}

// options are the launch options of r's executors: the loggers, the spill
// directory (made here), and the writable roots.
func (r *Resolved) options() (Options, error) {
	workdir, err := filepath.Abs(cmp.Or(r.Setup.Workdir, "."))
	if err != nil {
		return Options{}, fmt.Errorf("the workdir: %w", err)
	}
	roots, err := r.WritableRoots()
	if err != nil {
		return Options{}, err
	}
	if r.Setup.SandboxPolicy != nil && r.File != nil {
		if line, ok := r.File.sectionLines["sandbox"]; ok {
			return Options{}, r.File.errorf(line, "sandbox", "Setup.SandboxPolicy sets the sandbox policy too: set it once")
		}
	}
	opts := Options{Logger: r.Setup.Logger, PluginLogger: r.Setup.PluginLogger, WritableRoots: roots, Workdirs: []string{workdir},
		SandboxPolicy: r.Setup.SandboxPolicy}
	if r.Setup.SpillDir != "" {
		abs, err := filepath.Abs(r.Setup.SpillDir)
		if err == nil {
			err = os.MkdirAll(abs, 0o700)
		}
		if err != nil {
			return Options{}, fmt.Errorf("the spill directory: %w", err)
		}
		opts.SpillDir = abs
	}
	return opts, nil
}

// WritableRoots are the directories commands may write beneath that are
// known before an executor runs, where no executor binary may lie unless
// pinned: the settings file's sandbox.writableRoots, which every executor
// that takes a sandbox section makes writable. (The workdir counts as the
// executor says in Describe: see Options.WritableRoots.) Each is
// absolute; the host resolves their links.
func (r *Resolved) WritableRoots() ([]string, error) {
	var roots []string
	if r.File != nil {
		more, err := r.File.SandboxWritableRoots()
		if err != nil {
			return nil, err
		}
		for _, root := range more {
			if abs, err := filepath.Abs(root); err == nil {
				roots = append(roots, abs)
			}
		}
	}
	return roots, nil
}

// Mount mounts r's executors (see Mount) and hands the shell executor the
// settings file's shell section, checked against its schema. On error
// nothing is left running.
func (r *Resolved) Mount(ctx context.Context) (*Mounted, error) {
	opts, err := r.options()
	if err != nil {
		return nil, err
	}
	m, err := Mount(ctx, r.Executors, opts)
	if err != nil {
		return nil, err
	}
	if r.File != nil {
		shell := m.Shell()
		section, err := r.File.ShellSettings(shell.Description())
		if err == nil {
			err = r.File.locateConfigure(shell.Configure(ctx, section))
		}
		if err != nil {
			_ = m.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return m, nil
}

// StartRuntime starts a Runtime of r's one executor, which each reload
// resolves again from the settings file as it is then (ResolveAgain), and
// hands it the file's shell section, checked against its schema. On error
// nothing is left running.
func (r *Resolved) StartRuntime(ctx context.Context) (*Runtime, error) {
	if len(r.Executors) != 1 {
		return nil, &CallerError{fmt.Errorf("a runtime mounts one executor, not %d", len(r.Executors))}
	}
	opts, err := r.options()
	if err != nil {
		return nil, err
	}
	opts.Executor = r.Executors[0]
	name := opts.Executor.Name
	rt, err := StartRuntime(ctx, RuntimeOptions{
		Options: opts,
		Resolve: func(context.Context) (Executor, error) { return r.Setup.ResolveAgain(name) },
	})
	if err != nil {
		return nil, err
	}
	if r.File != nil {
		d, err := rt.Shell().Describe(ctx)
		if err == nil {
			var section []byte
			if section, err = r.File.ShellSettings(d); err == nil {
				err = r.File.locateConfigure(rt.Configure(ctx, section))
			}
		}
		if err != nil {
			_ = rt.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return rt, nil
}

// ApprovalPolicy is the settings file's approval section, checked against
// its schema; without a file, every default.
func (r *Resolved) ApprovalPolicy() (ApprovalPolicy, error) {
	var raw []byte
	if r.File != nil {
		var err error
		if raw, err = r.File.Section("approval", ApprovalSchema); err != nil {
			return ApprovalPolicy{}, err
		}
	}
	return ParseApprovalPolicy(raw)
}

// StartRuntime loads s and starts a Runtime of its one executor: see Load
// and Resolved.StartRuntime.
func (s Setup) StartRuntime(ctx context.Context) (*Runtime, *Resolved, error) {
	r, err := s.Load()
	if err != nil {
		return nil, nil, err
	}
	rt, err := r.StartRuntime(ctx)
	if err != nil {
		return nil, nil, err
	}
	return rt, r, nil
}
