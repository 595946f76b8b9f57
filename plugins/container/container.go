// Package container is the container executor: commands run in a
// container, through the Docker Engine API (github.com/moby/moby/client),
// so against Docker and against Podman's service alike. One long-lived
// container per executor, with an init as PID 1, runs dsh-agent (mounted
// read-only from this machine) as its main process, attached, and every
// call goes to it (remoteexec): over a side stream the agent connects to
// where the engine is on this machine (sidestream.go), else over the
// attached stream. When the attached stream closes (the
// executor closes, or its plugin dies) the agent kills what it started
// and exits, and the container goes with it (auto-removed); Close also
// removes it, and a start sweeps labelled containers whose plugin is dead.
// Every container drops every capability, runs with no-new-privileges,
// and under the executor's own seccomp profile: moby's default less the
// deny list bash-sandbox enforces (seccomp_linux.go).
package container

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/pkg/stdcopy"
	ctr "github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/system"
	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/internal/agentbin"
	"github.com/dsh-host/dsh-host/internal/binarytrust"
	"github.com/dsh-host/dsh-host/internal/hostid"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Name is the executor's name.
const Name = "container"

// Version is the executor's version.
const Version = "0.1.0"

// agentInContainer is where the agent is mounted in the container.
const agentInContainer = "/.dsh/dsh-agent"

// agentArgs are the agent's arguments in a container: it serves its
// stdio; it refuses set-id bits to what it runs (the workspace and the
// writable roots are this machine's directories); and it owns the
// container's PID namespace, so after each run or job it kills what no
// live run or job owns there, which tags cannot find (env -i setsid ...).
var agentArgs = []string{"--stdio", "--no-setid", "--sweep-pids"}

// Labels on every container the executor makes: that it is one, and the
// plugin that made it (its machine, pid and start time), so that a sweep
// finds those whose plugin is dead.
const (
	labelExecutor = "dev.dsh-host.executor"
	labelMachine  = "dev.dsh-host.machine"
	labelPlugin   = "dev.dsh-host.plugin"
)

// Settings are the container's keys of the shell section; the other keys
// (the common ones of every local executor) go to the agent.
type Settings struct {
	// Engine is the Docker Engine API address (unix:///run/podman/podman.sock,
	// tcp://…); empty: DOCKER_HOST, else the engine's default socket.
	Engine string `json:"engine,omitempty"`
	// Image the container runs (required); it needs nothing but what its
	// commands use: the agent is mounted into it.
	Image string `json:"image,omitempty"`
	// Workspace is a directory of this machine mounted at the same path
	// in the container, read-write, and the commands' default workdir.
	Workspace string `json:"workspace,omitempty"`
	// User the agent and the commands run as in the container
	// ("1000:1000", "nobody"); empty: the workspace's owner (commandUser),
	// without a workspace the image's.
	User string `json:"user,omitempty"`
	// NetworkName is the engine network a container joins when its mode
	// has a network (SandboxPolicy.Network, or danger-full-access);
	// empty: the engine's default.
	NetworkName string `json:"networkName,omitempty"`
	// Agent is the dsh-agent binary to mount, for the image's
	// architecture; empty: bin/agent/linux-ARCH/dsh-agent beside this
	// plugin's directory (as make build lays it out).
	Agent string `json:"agent,omitempty"`
	// ForwardEnv names variables of this plugin's environment that the
	// container gets; credential-like ones are scrubbed here first.
	ForwardEnv []string `json:"forwardEnv,omitempty"`
	// SandboxPolicy is the settings file's sandbox section: what each
	// mode's container may write and reach, and its limits.
	SandboxPolicy Policy `json:"sandboxPolicy,omitempty"`
	// Partitioning: a container per session (partition.go).
	Partitioning
}

// ownKeys are the JSON names of Settings.
var ownKeys = []string{"engine", "image", "workspace", "user", "networkName", "agent", "forwardEnv", pluginapi.SandboxPolicySetting,
	"containerPerSession", "maxSessions"}

const ownSchema = `"engine": {"type": "string", "description": "Docker Engine API address (unix://, tcp://); default DOCKER_HOST, else the engine's socket"},
    "image": {"type": "string", "description": "the image commands run in (required)"},
    "workspace": {"type": "string", "description": "directory of this machine mounted at the same path (writable but in read-only mode), and the default workdir"},
    "user": {"type": "string", "description": "user commands run as in the container (default: the workspace's owner, uid:gid; without a workspace, the image's)"},
    "networkName": {"type": "string", "description": "the engine network a container joins when the sandbox policy gives it one (default: the engine's default network)"},
    "agent": {"type": "string", "description": "the dsh-agent binary to mount (default: bin/agent/linux-ARCH/dsh-agent)"},
    "forwardEnv": {"type": "array", "items": {"type": "string"}, "description": "names of this plugin's variables the container gets (credentials scrubbed)"},
    "` + pluginapi.SandboxPolicySetting + `": ` + PolicySchema

// SettingsSchema is the JSON Schema of the container executor's settings:
// its own keys, and the common keys but spillDir (its spill files are in
// the container).
var SettingsSchema = remoteexec.SettingsSchema("shell (container)", ownSchema+partitionSchema)

// target opens sessions: one container each, in one sandbox mode.
type target struct {
	mode      pluginapi.SandboxMode
	partition string     // the partition it serves (labelPartition)
	swept     *sync.Once // one sweep for all the modes' targets
	// facts are what the last container opened enforces; offline, that
	// it has no network.
	facts   atomic.Pointer[pluginapi.SandboxFacts]
	offline atomic.Bool
	// protected protects the protected paths of the container open.
	protected atomic.Pointer[protection]
}

// intact says whether the container open (if any) still has every bind
// over a placeholder: one removed on this machine took its bind along.
func (t *target) intact() bool {
	p := t.protected.Load()
	return p == nil || p.intact()
}

func (t *target) Open(ctx context.Context, raw, agent []byte) (*remoteexec.Session, error) {
	var s Settings
	var scrub localexec.Settings
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
		}
	}
	if len(agent) > 0 {
		if err := json.Unmarshal(agent, &scrub); err != nil {
			return nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
		}
	}
	if s.Image == "" {
		return nil, fmt.Errorf("%w: image: the container executor needs an image to run commands in (shell.image in the settings)", pluginapi.ErrInvalidSettings)
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if s.Engine != "" {
		opts = append(opts, client.WithHost(s.Engine))
	}
	c, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("container: the engine %s: %w", engineName(s), err)
	}
	sess, err := t.open(ctx, c, s, scrub)
	if err != nil {
		c.Close()
		return nil, err
	}
	return sess, nil
}

func engineName(s Settings) string {
	if s.Engine != "" {
		return s.Engine
	}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	return "at the default socket"
}

func (t *target) open(ctx context.Context, c *client.Client, s Settings, scrub localexec.Settings) (*remoteexec.Session, error) {
	if _, err := c.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return nil, fmt.Errorf("container: the engine %s does not answer: %w", engineName(s), err)
	}
	t.swept.Do(func() {
		sweep(ctx, c)
		sweepSideDirs()
	})
	img, err := c.ImageInspect(ctx, s.Image)
	if err != nil {
		return nil, fmt.Errorf("container: image %s: %w (images are not pulled: build or load it first)", s.Image, err)
	}
	if img.Os != "" && img.Os != "linux" {
		return nil, fmt.Errorf("container: image %s is for %s; the agent runs on linux", s.Image, img.Os)
	}
	agent, err := agentFor(s, img.Architecture)
	if err != nil {
		return nil, err
	}
	env := remoteexec.ForwardedEnv(s.ForwardEnv, scrub)
	if !hasPath(img.Config) && !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		// An image without one (an imported tarball's) gets Docker's
		// default, which not every engine adds.
		env = append(env, "PATH="+defaultPath)
	}
	lay, err := layoutFor(s, t.mode, engineSockets(c.DaemonHost()))
	if err != nil {
		return nil, err
	}
	user, err := commandUser(s, lay.workdir)
	if err != nil {
		return nil, err
	}
	cfg := &ctr.Config{
		// The agent is the container's process (under the init): an
		// image's ENTRYPOINT and CMD are not run, so that one which
		// ignores its arguments, or prints, cannot stand in its way.
		Image: s.Image, Entrypoint: []string{agentInContainer}, Cmd: append(slices.Clip(agentArgs), lay.guardArgs()...), Env: env, User: user,
		OpenStdin: true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Labels: map[string]string{labelExecutor: Name, labelMachine: hostid.MachineID(), labelPlugin: hostid.Self(), labelPartition: t.partition},
	}
	lay.facts.Enforced = append(lay.facts.Enforced, userFact(s, user), setIDFact)
	t.facts.Store(&lay.facts)
	t.offline.Store(!lay.network)
	if !lay.network {
		for k, v := range localexec.OfflineEnv {
			if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }) {
				cfg.Env = append(cfg.Env, k+"="+v)
			}
		}
	}
	withInit := true
	host := &ctr.HostConfig{
		Init: &withInit, AutoRemove: true,
		// The agent's stdout is the stream, not a log: an engine that also
		// logged it would copy every byte twice, and slow the stream.
		LogConfig:   ctr.LogConfig{Type: "none"},
		Binds:       []string{agent + ":" + agentInContainer + ":ro"},
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
	}
	lay.apply(cfg, host, s.NetworkName)
	arch := img.Architecture
	if arch == "" {
		arch = "amd64"
	}
	profile, err := seccompProfile(arch, lay.network)
	if err != nil {
		return nil, err
	}
	opt, dropProfile, err := seccompOption(ctx, c, s, profile)
	if err != nil {
		return nil, err
	}
	host.SecurityOpt = append(host.SecurityOpt, opt)
	protected, err := holdProtected(lay.protected)
	if err != nil {
		dropProfile()
		return nil, fmt.Errorf("container: %w", err)
	}
	host.Binds = append(host.Binds, protected.binds...)
	id, side, err := createContainer(ctx, c, cfg, host, sideFor(c))
	dropProfile()
	if err != nil {
		protected.release()
		return nil, fmt.Errorf("container: creating a container of %s: %w", s.Image, err)
	}
	remove := func(ctx context.Context) error {
		defer c.Close()
		// The placeholders go once the container that covers them is.
		defer protected.release()
		return removeContainer(ctx, c, id)
	}
	attached, err := c.ContainerAttach(ctx, id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err == nil {
		if _, err = c.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
			attached.Close()
			err = fmt.Errorf("container: starting %s of %s: %w", short(id), s.Image, err)
		}
	} else {
		err = fmt.Errorf("container: attaching to %s: %w", short(id), err)
	}
	if err != nil {
		if side != nil {
			side.close()
		}
		_ = remove(context.WithoutCancel(ctx))
		return nil, err
	}
	name := "container " + short(id)
	stream := newAttachStream(attached.HijackedResponse, name)
	// Closing the lifeline ends the agent, and with it the session.
	protected.watch(func() { stream.Close() })
	t.protected.Store(protected)
	sess := &remoteexec.Session{
		Stream:  stream,
		Cleanup: remove,
		Where:   name + " of " + s.Image + " (" + string(t.mode) + ")",
	}
	if side == nil {
		return sess, nil
	}
	conn, err := side.accept(ctx, func(ctx context.Context) (int, error) {
		in, err := c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil || in.Container.State == nil {
			return 0, fmt.Errorf("inspecting the container: %v", err)
		}
		return in.Container.State.Pid, nil
	}, stream.noSide)
	if err != nil {
		if ctx.Err() != nil {
			stream.Close()
			_ = remove(context.WithoutCancel(ctx))
			return nil, ctx.Err()
		}
		fmt.Fprintf(os.Stderr, "%s: no side stream (%v): calls cross the attached stream\n", name, err)
		return sess, nil
	}
	// The attached stream is now the lifeline alone: what the agent
	// writes there is read and dropped (its stderr still reaches the
	// log), and closing it ends the agent.
	go func() { _, _ = io.Copy(io.Discard, stream) }()
	sess.Stream = conn
	sess.Cleanup = func(ctx context.Context) error {
		stream.Close()
		return remove(ctx)
	}
	return sess, nil
}

// createContainer creates the container cfg and host describe, with
// side's socket mounted and the agent told to connect to it when side is
// not nil. An engine that refuses that mount (one in a VM that does not
// share this machine's temporary directory) is asked again without it,
// and calls cross the attached stream. It returns the container's id and
// the side stream in use (nil when none is).
func createContainer(ctx context.Context, c *client.Client, cfg *ctr.Config, host *ctr.HostConfig, side *sideListener) (string, *sideListener, error) {
	if side != nil {
		withSide, hostWithSide := *cfg, *host
		withSide.Cmd = append(slices.Clip(cfg.Cmd), side.agentArgs()...)
		hostWithSide.Binds = append(slices.Clip(host.Binds), side.bind())
		created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &withSide, HostConfig: &hostWithSide})
		if err == nil {
			return created.ID, side, nil
		}
		side.close()
		if ctx.Err() != nil || client.IsErrConnectionFailed(err) {
			return "", nil, err // no engine to ask again
		}
		// (Should the engine have made the first container and its answer
		// been lost, that container, never started, is not removed by
		// AutoRemove: it carries this plugin's label, and the first start
		// after this plugin ends sweeps it.)
		created, again := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
		if again != nil {
			return "", nil, again // not the mount's fault: the error without it
		}
		fmt.Fprintf(os.Stderr, "container %s: made without the side stream's socket, which the engine did not take (%v): calls cross the attached stream\n", short(created.ID), err)
		return created.ID, nil, nil
	}
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return "", nil, err
	}
	return created.ID, nil, nil
}

// seccompOption is the security option that hands profile to engine c,
// and what to call once the container is created. Docker takes the
// profile itself ("seccomp=<json>", as its CLI sends it, and checks it at
// start); Podman's Docker API takes only a path on the engine's machine
// (it opens the value as a file, and loads the profile into the
// container's spec at create), so for Podman the profile is written to a
// private file of this machine, which must then be the engine's, and
// removed once the container is created. A Podman on another machine
// gets no container: this executor does not run commands without its
// profile.
func seccompOption(ctx context.Context, c *client.Client, s Settings, profile []byte) (string, func(), error) {
	v, err := c.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("container: asking the engine %s its version: %w", engineName(s), err)
	}
	if !isPodman(v) {
		return "seccomp=" + string(profile), func() {}, nil
	}
	if !strings.HasPrefix(c.DaemonHost(), "unix://") {
		return "", nil, fmt.Errorf("container: Podman's Docker API takes a seccomp profile only as a file of the engine's machine, and the engine %s is not reached through a unix socket of this one: no container is made without the profile", engineName(s))
	}
	dir, err := os.MkdirTemp("", "dsh-seccomp-")
	if err != nil {
		return "", nil, fmt.Errorf("container: writing the seccomp profile: %w", err)
	}
	path := filepath.Join(dir, "profile.json")
	if err := os.WriteFile(path, profile, 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("container: writing the seccomp profile: %w", err)
	}
	return "seccomp=" + path, func() { os.RemoveAll(dir) }, nil
}

// isPodman says whether the engine that answered v is Podman's service.
func isPodman(v client.ServerVersionResult) bool {
	return slices.ContainsFunc(v.Components, func(c system.ComponentVersion) bool { return strings.HasPrefix(c.Name, "Podman") })
}

// sideFor is a side stream's socket for a container of engine c, or nil
// where none can be made: the engine is on another machine (it is not
// reached by a unix socket), or this system has none.
func sideFor(c *client.Client) *sideListener {
	if !sideStreams || !strings.HasPrefix(c.DaemonHost(), "unix://") {
		return nil
	}
	side, err := listenSide()
	if err != nil {
		fmt.Fprintf(os.Stderr, "container: no side stream (%v): calls cross the attached stream\n", err)
		return nil
	}
	return side
}

// removeContainer removes container id, or sees it gone (its AutoRemove
// may be under way: an engine can refuse to remove a container that is
// stopping, and is asked again).
func removeContainer(ctx context.Context, c *client.Client, id string) error {
	deadline := time.Now().Add(removeWithin)
	for {
		_, err := c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true})
		if err == nil || isGone(err) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("container: removing %s: %w", short(id), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removeWithin bounds the retries of a container's removal.
const removeWithin = 10 * time.Second

// isGone says whether err, the engine's answer to a forced removal, says
// the container is no more: not found (removed already), or a conflict
// (its removal is already under way, by its AutoRemove: with Force, the
// engine refuses nothing else so).
func isGone(err error) bool {
	return cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)
}

func short(id string) string { return id[:min(len(id), 12)] }

// defaultPath is the PATH of a container whose image sets none, as Docker
// gives it.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// hasPath says whether an image's configuration sets PATH.
func hasPath(cfg *dockerspec.DockerOCIImageConfig) bool {
	if cfg == nil {
		return false
	}
	return slices.ContainsFunc(cfg.Env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
}

// agentFor is the agent binary for an image's architecture.
func agentFor(s Settings, arch string) (string, error) {
	if arch == "" {
		arch = "amd64"
	}
	path, err := agentbin.Find(s.Agent, arch, "the image")
	if err != nil {
		return "", fmt.Errorf("container: %w", err)
	}
	// The agent gets a plugin binary's placement check: one that a
	// command could replace (beneath the workspace or a writable root,
	// which some mode's container writes) would run, swapped, in the next
	// container.
	real, err := binarytrust.Check(path, append([]string{s.Workspace}, s.SandboxPolicy.WritableRoots...))
	if _, ok := errors.AsType[*binarytrust.Unsafe](err); ok {
		return "", fmt.Errorf("container: the agent %w; move it, or set shell.agent to one elsewhere", err)
	}
	if err != nil {
		return "", fmt.Errorf("container: the agent %w", err)
	}
	return real, nil
}

// attachStream is a container's attached stdio as one stream: what is
// written goes to the agent's stdin; its stdout, demultiplexed, is read;
// its stderr goes to this plugin's (the host's log).
type attachStream struct {
	h      client.HijackedResponse
	out    *bufPipe
	closed sync.Once
	// noSide is closed once no side stream can come: the stream ended,
	// or the agent said on stderr that it could not connect.
	noSide     chan struct{}
	noSideOnce sync.Once
}

func newAttachStream(h client.HijackedResponse, name string) *attachStream {
	out := newBufPipe(attachBuffer)
	a := &attachStream{h: h, out: out, noSide: make(chan struct{})}
	go func() {
		_, err := stdcopy.StdCopy(out, agentStderr{agentbin.Stderr{W: os.Stderr, Where: name}, a.sideRefused}, h.Reader)
		a.sideRefused() // the stream ended
		out.CloseWithError(err)
	}()
	return a
}

// attachBuffer bounds the agent's stdout held for a reader: a reader that
// lags holds the agent up, as a pipe does.
const attachBuffer = 1 << 20

// sideRefused says that no side stream will come.
func (a *attachStream) sideRefused() { a.noSideOnce.Do(func() { close(a.noSide) }) }

// agentNoSide begins what the agent writes on stderr when it cannot
// connect to the side stream's socket (cmd/dsh-agent): it then serves
// stdio alone, and nothing need wait for its connection.
const agentNoSide = "dsh-agent: no side stream"

// agentStderr is the agent's stderr: written to the log, and watched for
// agentNoSide.
type agentStderr struct {
	log    io.Writer
	noSide func()
}

func (e agentStderr) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte(agentNoSide)) {
		e.noSide()
	}
	return e.log.Write(b)
}

func (a *attachStream) Read(p []byte) (int, error)  { return a.out.Read(p) }
func (a *attachStream) Write(p []byte) (int, error) { return a.h.Conn.Write(p) }

// Close closes the agent's stdin (it then kills what it runs and exits)
// and the connection.
func (a *attachStream) Close() error {
	a.closed.Do(func() {
		_ = a.h.CloseWrite()
		a.h.Close()
		a.out.Close()
	})
	return nil
}
