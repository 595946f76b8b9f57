package host

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dsh-host/dsh-host/internal/ownedtemp"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/registry"
)

// randomPrefix is a fresh tag prefix for one plugin.
func randomPrefix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ServeArgs are the arguments a dsh-host binary takes to serve one of its
// built-in executors as a plugin: `dsh-host plugin serve NAME`.
func ServeArgs(name string) []string { return []string{"plugin", "serve", name} }

// Executor says which plugin binary to launch.
type Executor struct {
	// Name identifies the executor in logs and errors.
	Name string
	// Path is the plugin binary; Args are its arguments.
	Path string
	Args []string
	// Checksum, when set, is the SHA-256 the binary must have. It pins
	// the binary: one that lies where others could replace it (see
	// Options.WritableRoots) is run only so, from a private copy checked
	// against it.
	Checksum []byte
	// Builtin says Path is this very program, serving one of its built-in
	// executors (BuiltinExecutor sets it). A launch re-executes the image
	// this process runs (/proc/self/exe on Linux), never what lies at Path
	// by then, so the binary is not checked and has nothing to watch.
	Builtin bool
}

// BuiltinExecutor is the executor the running binary serves itself under
// `plugin serve NAME`: still a separate process, over go-plugin. The binary
// must serve it: its main calls builtins.ServeIfAsked()
// (github.com/dsh-host/dsh-host/plugins/builtins) first thing, as dsh-host's
// does; a launch fails, saying so, where it does not.
func BuiltinExecutor(name string) (Executor, error) {
	self, err := os.Executable()
	if err != nil {
		return Executor{}, fmt.Errorf("host: locating this binary to serve %s: %w", name, err)
	}
	return Executor{Name: name, Path: self, Args: ServeArgs(name), Builtin: true}, nil
}

// Options configure Launch.
type Options struct {
	Executor Executor
	// Logger receives the host's and the plugin's logs; nil discards them.
	Logger hclog.Logger
	// PluginLogger, when set, receives what the plugin process logs (its
	// go-plugin client's lines and the plugin's stderr) instead of Logger:
	// a host that shows its own events at Info can keep those quieter.
	PluginLogger hclog.Logger
	// StartTimeout bounds the plugin's start and handshake; zero means 10 s.
	StartTimeout time.Duration
	// Settings is the executor's settings section (the "shell" namespace)
	// as JSON, handed to it with Configure before the first command.
	Settings []byte
	// SandboxPolicy, when set, is the policy of a sandboxing executor
	// (bash-sandbox, container), typed: the host hands it over in the
	// settings under pluginapi.SandboxPolicySetting, at every launch and
	// Runtime.Configure. Settings must not carry one too, and an executor
	// that does not sandbox is refused: nothing would apply it.
	SandboxPolicy *pluginapi.SandboxPolicy
	// SpillDir, when set, is where an executor that takes a spillDir
	// setting keeps its spill files, unless Settings name one: a directory
	// of the host's, so that the files outlive a plugin that dies, and go
	// when the host removes it.
	SpillDir string
	// WritableRoots are further directories commands may write beneath
	// that are known before the executor runs. Every launch (the first,
	// each reload, each restart) refuses an executor binary that lies
	// beneath one of them, or where another user could replace it, unless
	// Executor.Checksum pins it: see registry.CheckBinary. The sandbox
	// policy's writable roots (SandboxPolicy's, or those in Settings) are
	// always checked so, whether or not they are named here too.
	//
	// Besides them, the executor says in Describe where its commands can
	// write on this machine (pluginapi.Description.Reach): a binary there
	// is refused once the executor has its settings, before any command
	// runs, and every later launch checks it before running it. An
	// executor that does not say is taken to write Workdirs.
	WritableRoots []string
	// Workdirs are the directories of this machine commands run in (the
	// workdir of a session): part of the reach of an executor whose
	// commands write their workdir (Reach.Workdirs) or that does not say.
	// Empty means the current directory, where a command that names no
	// workdir runs.
	Workdirs []string
	// reach is the reach the executor said at its last launch or
	// configuration, checked before each later launch.
	reach []registry.Root

	// hostSpillDir is a spill directory the host made for itself, apart
	// from the plugin's socket directory: the plugin removes it when the
	// host dies (pluginapi.HostSpillDirVar). Never a caller's SpillDir.
	hostSpillDir string
}

// ErrLaunch wraps every failure to start or check a plugin.
var ErrLaunch = errors.New("host: launching executor")

// Host is a mounted executor plugin.
type Host struct {
	client  *plugin.Client
	shell   pluginapi.ShellExecutor
	desc    pluginapi.Description
	sockDir string
	// tagPrefix starts the tags of everything the plugin starts.
	tagPrefix string
	// spillDir is where the executor spills, when it takes a spillDir.
	spillDir string

	closeOnce sync.Once
	closeErr  error

	// ex and opts launched it.
	ex   Executor
	opts Options
	mu   sync.Mutex
	// reach is what the executor said at its last configuration: see
	// checkReach.
	reach []registry.Root
}

// Launch starts the executor plugin, connects to it over gRPC, and checks
// that it provides the shell service in the shell settings namespace. On
// failure nothing is left running.
func Launch(ctx context.Context, opts Options) (*Host, error) {
	return launch(ctx, opts, true)
}

// launch starts and checks a plugin; requireShell says it must provide the
// shell service (Mount checks the set instead).
func launch(ctx context.Context, opts Options, requireShell bool) (*Host, error) {
	ex := opts.Executor
	if name := os.Getenv(pluginapi.BuiltinServeVar); name != "" {
		// This program was launched to serve an executor, and its main went
		// on to launch some instead: served, it would do so again, and
		// again.
		return nil, fmt.Errorf("%w %s: this process was started to serve the built-in executor %s (%q), but its main launches executors instead: "+
			"a program that launches its own built-in executors must call builtins.ServeIfAsked() (github.com/dsh-host/dsh-host/plugins/builtins) first thing in main",
			ErrLaunch, ex.Name, name, os.Args)
	}
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	var secure *plugin.SecureConfig
	if len(ex.Checksum) > 0 {
		secure = &plugin.SecureConfig{Checksum: ex.Checksum, Hash: sha256.New()}
	}
	// The plugin makes its socket in a directory of ours, so that Close can
	// remove it however the plugin ended; what dead hosts left goes while
	// the plugin starts.
	defer sweepOrphansAside()()
	sockDir, err := ownedtemp.Make("dsh-host-")
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLaunch, ex.Name, err)
	}
	if _, err := opts.withPolicy(opts.Settings); err != nil {
		_ = os.RemoveAll(sockDir) // refused before the binary runs
		return nil, fmt.Errorf("%w %s: %w", ErrLaunch, ex.Name, err)
	}
	bin, err := executorBinary(ex, opts.knownRoots(), sockDir)
	if err != nil {
		_ = os.RemoveAll(sockDir)
		if errors.Is(err, registry.ErrUnsafeBinary) || errors.Is(err, registry.ErrChecksumMismatch) {
			return nil, fmt.Errorf("%w: %w", ErrLaunch, err) // the message names the binary
		}
		return nil, fmt.Errorf("%w %s (%s): %w", ErrLaunch, ex.Name, ex.Path, err)
	}
	if bin != ex.Path {
		logger.Debug("launching the executor", "name", ex.Name, "path", ex.Path, "runs", bin)
	}
	cmd := exec.Command(bin, ex.Args...)
	cmd.Args[0] = ex.Path // what a person reads in ps
	cmd.SysProcAttr = pluginProcAttr()
	// The executor tags what it starts with a prefix of ours, so that what
	// a dead plugin left can still be found.
	tagPrefix := randomPrefix()
	cmd.Env = []string{plugin.EnvUnixSocketDir + "=" + sockDir, pluginapi.ExecIDPrefixVar + "=" + tagPrefix}
	if ex.Builtin {
		cmd.Env = append(cmd.Env, pluginapi.BuiltinServeVar+"="+ex.Name)
	}
	if opts.hostSpillDir != "" {
		cmd.Env = append(cmd.Env, pluginapi.HostSpillDirVar+"="+opts.hostSpillDir)
	}
	// Mutual TLS, with keys of ours for both ends: the plugin's reach it on
	// a pipe it inherits (pluginapi.TLSFDVar).
	keys, err := pluginapi.NewConnectionKeys()
	var keysHanded func()
	if err == nil {
		keysHanded, err = keys.Hand(cmd)
	}
	if err != nil {
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("%w %s: the connection's keys: %w", ErrLaunch, ex.Name, err)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginapi.Handshake,
		VersionedPlugins: pluginapi.PluginSets(),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        keys.Host,
		SecureConfig:     secure,
		StartTimeout:     timeout,
		Logger:           cmp.Or(opts.PluginLogger, logger).Named(ex.Name),
	})
	fail := func(err error) (*Host, error) {
		client.Kill()
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("%w %s (%s): %w", ErrLaunch, ex.Name, ex.Path, err)
	}
	rpc, err := client.Client()
	keysHanded() // the plugin has its copy (or never started)
	if err != nil {
		err = pluginapi.ExplainLaunchError(err)
		if ex.Builtin {
			err = fmt.Errorf("%w (%s serves its built-in executors only when its main calls builtins.ServeIfAsked() first: see host.BuiltinExecutor)", err, ex.Path)
		}
		return fail(err)
	}
	raw, err := rpc.Dispense(pluginapi.PluginName)
	if err != nil {
		return fail(err)
	}
	shell, ok := raw.(pluginapi.ShellExecutor)
	if !ok {
		return fail(fmt.Errorf("plugin %q is a %T, not a ShellExecutor", pluginapi.PluginName, raw))
	}
	// A plugin that answers the handshake and then nothing must not hold
	// the launch (or a reload) forever.
	ctx, cancelAnswer := context.WithTimeout(ctx, timeout)
	defer cancelAnswer()
	desc, err := shell.Describe(ctx)
	if err != nil {
		return fail(fmt.Errorf("describe: %w", err))
	}
	if requireShell && !slices.Contains(desc.Services, pluginapi.ServiceShell) {
		return fail(fmt.Errorf("executor %s does not provide the %q service (it provides %v)",
			desc.Name, pluginapi.ServiceShell, desc.Services))
	}
	if requireShell && desc.SettingsNamespace != pluginapi.SettingsNamespace {
		return fail(fmt.Errorf("executor %s registers settings namespace %q, not %q",
			desc.Name, desc.SettingsNamespace, pluginapi.SettingsNamespace))
	}
	if opts.SandboxPolicy != nil && desc.SettingsNamespace == pluginapi.SettingsNamespace && SandboxPolicySchema(desc.SettingsSchema) == nil {
		return fail(fmt.Errorf("%w (%s): nothing would apply Options.SandboxPolicy; leave it out, or launch a sandboxing executor (bash-sandbox, container)",
			ErrNoSandbox, desc.Name))
	}
	spillDir := opts.SpillDir
	if spillDir == "" {
		// The host's own directory: removed on Close, even after the plugin
		// died without removing a directory of its own.
		spillDir = filepath.Join(sockDir, "spill")
		if err := os.Mkdir(spillDir, 0o700); err != nil {
			return fail(err)
		}
	}
	h := &Host{client: client, shell: shell, desc: desc, sockDir: sockDir, tagPrefix: tagPrefix, spillDir: spillDir,
		ex: ex, opts: opts, reach: opts.reach}
	if err := h.Configure(ctx, opts.Settings); err != nil {
		if errors.Is(err, registry.ErrUnsafeBinary) {
			client.Kill()
			_ = os.RemoveAll(sockDir)
			return nil, fmt.Errorf("%w: %w", ErrLaunch, err) // the message names the binary
		}
		return fail(err)
	}
	return h, nil
}

// knownRoots are the roots a launch checks the binary against before it
// runs: WritableRoots, the sandbox policy's writable roots, and the reach
// the executor said last time.
func (o Options) knownRoots() []registry.Root {
	roots := make([]registry.Root, 0, len(o.WritableRoots)+len(o.reach))
	for _, r := range o.WritableRoots {
		roots = append(roots, registry.Root{Path: r, What: "the sandbox writable root %s", Who: "a sandboxed command"})
	}
	for _, r := range o.policyRoots() {
		roots = append(roots, registry.Root{Path: r, What: "the sandbox policy's writable root %s", Who: "a sandboxed command"})
	}
	return append(roots, o.reach...)
}

// reachRoots are the roots of this machine that commands of the executor
// d describes can write, each saying which rule makes it one: what d.Reach
// says, or, when it says nothing, the workdirs.
func reachRoots(d pluginapi.Description, workdirs []string) []registry.Root {
	who := "a command of " + d.Name
	var roots []registry.Root
	switch d.Reach.Kind {
	case pluginapi.ReachUser:
		// The commands write wherever this user may: no place is safer
		// than another, and only ownership and permissions are checked.
	case pluginapi.ReachPaths:
		for _, p := range d.Reach.Paths {
			roots = append(roots, registry.Root{Path: p, Who: who,
				What: "%s, which " + d.Name + "'s commands can write (it says so in Describe)"})
		}
		if d.Reach.Workdirs {
			for _, w := range workdirs {
				roots = append(roots, registry.Root{Path: w, Who: who,
					What: "the workdir %s, which " + d.Name + "'s commands can write (it says so in Describe)"})
			}
		}
	default:
		for _, w := range workdirs {
			roots = append(roots, registry.Root{Path: w, Who: who,
				What: "the workdir %s (" + d.Name + " does not say in Describe where its commands can write, so the workdir counts)"})
		}
	}
	return roots
}

// checkReach asks the executor, as configured now, where its commands can
// write, and refuses (an *registry.UnsafeBinaryError) its binary when it
// lies there and no checksum pins it. A pinned one is accepted: every
// later launch checks the pin and runs it from a private copy. What it
// learned is checked before every later launch.
func (h *Host) checkReach(ctx context.Context) error {
	if h.ex.Builtin {
		return nil // the running image is launched, never a file
	}
	d, err := h.shell.Describe(ctx)
	if err != nil {
		return fmt.Errorf("host: describe: %w", err)
	}
	roots := reachRoots(d, h.opts.workdirs())
	h.mu.Lock()
	h.reach = roots
	h.mu.Unlock()
	real, err := filepath.EvalSymlinks(h.ex.Path)
	if err != nil {
		return fmt.Errorf("host: executor %s: %w", h.ex.Path, err)
	}
	if abs, err := filepath.Abs(real); err == nil {
		real = abs
	}
	err = registry.BinaryBeneath(real, roots, "a command")
	if err != nil && len(h.ex.Checksum) == 0 {
		return err
	}
	return nil
}

// learnedReach is the reach the executor said last (see checkReach).
func (h *Host) learnedReach() []registry.Root {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reach
}

// Shell is the mounted executor.
func (h *Host) Shell() pluginapi.ShellExecutor { return h.shell }

// Description is what the executor said about itself at launch.
func (h *Host) Description() pluginapi.Description { return h.desc }

// PluginPID is the process id of the plugin, or 0 once it has exited.
func (h *Host) PluginPID() int {
	if h.client.Exited() {
		return 0
	}
	if rc := h.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// KillPlugin kills the plugin process outright (SIGKILL): for a plugin that
// no longer answers. What it started is left to KillLeftovers.
func (h *Host) KillPlugin() {
	if pid := h.PluginPID(); pid > 0 {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

// Configure hands the executor its settings section (JSON; nil for none),
// with Options.SandboxPolicy added when it is set (for the executor of the
// shell namespace), and the host's spill directory when the section names
// none. It replaces what an earlier Configure set.
func (h *Host) Configure(ctx context.Context, settings []byte) error {
	if h.desc.SettingsNamespace == pluginapi.SettingsNamespace {
		var err error
		if settings, err = h.opts.withPolicy(settings); err != nil {
			return err
		}
	}
	settings, err := withSpillDir(settings, h.desc, h.spillDir)
	if err != nil {
		return err
	}
	if len(settings) == 0 {
		return h.checkReach(ctx)
	}
	c, ok := h.shell.(pluginapi.Configurable)
	if !ok {
		return fmt.Errorf("host: executor %s cannot be configured", h.desc.Name)
	}
	if err := c.Configure(ctx, settings); err != nil {
		return fmt.Errorf("host: settings: %w", err)
	}
	// Settings may widen the reach (a container's workspace): a binary
	// that lies there now is refused before a command runs.
	return h.checkReach(ctx)
}

// KillLeftovers kills whatever the plugin started that is still alive: after
// the plugin died, what it could not terminate itself. It reports how many.
func (h *Host) KillLeftovers() int { return killTagged(h.tagPrefix) }

// Exited reports whether the plugin process has exited.
func (h *Host) Exited() bool { return h.client.Exited() }

// Close terminates and joins every process the executor still runs, then
// stops the plugin (gracefully, then by force). Safe to call twice.
func (h *Host) Close(ctx context.Context) error {
	h.closeOnce.Do(func() {
		// The executor's Close terminates what it started; only when it
		// could not (the plugin is dead, or Close failed) does the host go
		// looking for leftovers itself, in /proc.
		cleaned := false
		if !h.client.Exited() {
			if err := h.shell.Close(ctx); err != nil {
				h.closeErr = fmt.Errorf("host: closing executor %s: %w", h.desc.Name, err)
			} else {
				cleaned = true
			}
		}
		h.client.Kill()
		if !cleaned {
			h.KillLeftovers()
		}
		if err := os.RemoveAll(h.sockDir); err != nil && h.closeErr == nil {
			h.closeErr = fmt.Errorf("host: removing the plugin's socket directory: %w", err)
		}
	})
	return h.closeErr
}
