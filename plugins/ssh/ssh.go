// Package ssh is the SSH executor: commands run on another machine, over
// SSH (golang.org/x/crypto/ssh). It authenticates with a key or the SSH
// agent, checks the host key against known_hosts (an unknown or changed
// key is refused, never trusted silently), uploads dsh-agent once to a
// per-version path on the target (verified by its SHA-256), and runs it in
// one session whose stdio is the executor's stream (remoteexec), from a
// marker on: what the target's login scripts print is logged, not read as
// the agent's. A dropped
// connection fails the calls in flight; the agent, its stdin closed by
// sshd, kills what it started. Keepalives find a dead connection within
// their interval.
package ssh

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skeema/knownhosts"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/dsh-host/dsh-host/internal/agentbin"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// Name is the executor's name.
const Name = "ssh"

// Version is the executor's version.
const Version = "0.1.0"

// Settings are the SSH executor's keys of the shell section; the other
// keys (the common ones) go to the agent.
type Settings struct {
	// Address is the target, host:port (port 22 when none).
	Address string `json:"address,omitempty"`
	// User to log in as (default: this process's user).
	User string `json:"user,omitempty"`
	// IdentityFile is a private key (unencrypted); without one, the SSH
	// agent at SSH_AUTH_SOCK authenticates.
	IdentityFile string `json:"identityFile,omitempty"`
	// KnownHosts is the known_hosts file the host key must be in
	// (default ~/.ssh/known_hosts).
	KnownHosts string `json:"knownHosts,omitempty"`
	// Agent is the dsh-agent binary to upload, for the target's
	// architecture (default: bin/agent/linux-ARCH/dsh-agent beside this
	// plugin's directory).
	Agent string `json:"agent,omitempty"`
	// KeepaliveMs is how often the connection is checked (default 5000);
	// a connection that misses two is closed.
	KeepaliveMs int64 `json:"keepaliveMs,omitempty"`
	// ForwardEnv names variables of this plugin's environment the agent
	// gets; credential-like ones are scrubbed here first.
	ForwardEnv []string `json:"forwardEnv,omitempty"`
}

var ownKeys = []string{"address", "user", "identityFile", "knownHosts", "agent", "keepaliveMs", "forwardEnv"}

const ownSchema = `"address": {"type": "string", "description": "the target, host:port (required)"},
    "user": {"type": "string", "description": "user to log in as (default: this process's)"},
    "identityFile": {"type": "string", "description": "private key; without one, the SSH agent (SSH_AUTH_SOCK)"},
    "knownHosts": {"type": "string", "description": "known_hosts file the host key must be in (default ~/.ssh/known_hosts)"},
    "agent": {"type": "string", "description": "the dsh-agent binary to upload (default: bin/agent/linux-ARCH/dsh-agent)"},
    "keepaliveMs": {"type": "integer", "minimum": 100, "default": 5000, "description": "how often the connection is checked"},
    "forwardEnv": {"type": "array", "items": {"type": "string"}, "description": "names of this plugin's variables the agent gets (credentials scrubbed)"}`

// SettingsSchema is the JSON Schema of the SSH executor's settings.
var SettingsSchema = remoteexec.SettingsSchema("shell (ssh)", ownSchema)

// New returns the SSH executor.
func New() *remoteexec.Executor {
	return remoteexec.New(remoteexec.Config{
		Description: pluginapi.Description{
			Name: Name, Version: Version, Platform: "linux", Shell: "bash",
			SettingsNamespace: pluginapi.SettingsNamespace, SettingsSchema: SettingsSchema,
			Services: []string{pluginapi.ServiceShell},
			// The commands run on another machine: nothing of this one.
			Reach: pluginapi.HostReach{Kind: pluginapi.ReachPaths},
			// The agent on the other machine gives them.
			Terminals: true, Input: true,
		},
		Target: target{},
		Split: func(raw []byte) ([]byte, []byte, error) {
			t, a, err := remoteexec.SplitSettings(raw, ownKeys...)
			if err == nil && t != nil {
				var s Settings
				err = remoteexec.DecodeStrict(t, &s)
			}
			return t, a, err
		},
	})
}

type target struct{}

// dialTimeout bounds the connection and the login.
const dialTimeout = 15 * time.Second

func (target) Open(ctx context.Context, raw, agentPart []byte) (*remoteexec.Session, error) {
	var s Settings
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
		}
	}
	if s.Address == "" {
		return nil, fmt.Errorf("%w: address: the SSH executor needs a target (shell.address, host:port)", pluginapi.ErrInvalidSettings)
	}
	addr := s.Address
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "22")
	}
	cfg, closeAuth, err := clientConfig(s)
	if err != nil {
		return nil, err
	}
	// Ask for a key of a type known_hosts holds for the target, as OpenSSH
	// does: a target that also has a key of another type (a stock sshd's
	// ecdsa key beside the ed25519 one known_hosts holds; x/crypto/ssh asks
	// for ecdsa first) would offer that one, and be refused as changed.
	cfg.HostKeyAlgorithms = knownhosts.HostKeyAlgorithms(cfg.HostKeyCallback, addr)
	defer closeAuth()
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ssh: connecting to %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Now().Add(dialTimeout))
	cc, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err != nil {
		conn.Close()
		if hk := (*hostKeyError)(nil); errors.As(err, &hk) {
			err = hk // said in full: not a failed handshake
		}
		return nil, fmt.Errorf("ssh: %s: %w", addr, err)
	}
	_ = conn.SetDeadline(time.Time{})
	c := ssh.NewClient(cc, chans, reqs)
	sess, err := start(ctx, c, s, agentPart, cfg.User+"@"+addr)
	if err != nil {
		c.Close()
		return nil, err
	}
	return sess, nil
}

// clientConfig is the login: the user, the key or the agent, and the
// host key check against known_hosts.
func clientConfig(s Settings) (*ssh.ClientConfig, func(), error) {
	user := s.User
	if user == "" {
		user = os.Getenv("USER")
	}
	kh := s.KnownHosts
	if kh == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil, fmt.Errorf("ssh: known_hosts: %w", err)
		}
		kh = filepath.Join(home, ".ssh", "known_hosts")
	}
	check, err := checkHostKey(kh)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh: known_hosts %s: %w (the target's host key must be there: ssh-keyscan, checked, then added)", kh, err)
	}
	noop := func() {}
	var auth []ssh.AuthMethod
	if s.IdentityFile != "" {
		key, err := os.ReadFile(s.IdentityFile)
		if err != nil {
			return nil, nil, fmt.Errorf("ssh: identityFile: %w", err)
		}
		signer, err := ssh.ParsePrivateKey(key)
		if err != nil {
			return nil, nil, fmt.Errorf("ssh: identityFile %s: %w", s.IdentityFile, err)
		}
		auth = append(auth, ssh.PublicKeys(signer))
	} else if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" {
		ac, err := net.Dial("unix", sock)
		if err != nil {
			return nil, nil, fmt.Errorf("ssh: the SSH agent at %s: %w", sock, err)
		}
		auth = append(auth, ssh.PublicKeysCallback(agent.NewClient(ac).Signers))
		noop = func() { ac.Close() }
	} else {
		return nil, nil, fmt.Errorf("%w: identityFile: no key, and no SSH agent (SSH_AUTH_SOCK)", pluginapi.ErrInvalidSettings)
	}
	return &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: check, Timeout: dialTimeout}, noop, nil
}

// start uploads the agent where it is missing or differs, and starts it
// in a session whose stdio is the stream.
func start(ctx context.Context, c *ssh.Client, s Settings, agentPart []byte, where string) (*remoteexec.Session, error) {
	arch, err := output(c, "uname -m", where)
	if err != nil {
		return nil, fmt.Errorf("ssh: %s: uname -m: %w", where, err)
	}
	goarch := agentbin.UnameArch(arch)
	if goarch == "" {
		return nil, fmt.Errorf("ssh: %s is %s: the agent is built for x86_64 and aarch64", where, strings.TrimSpace(arch))
	}
	local, sum, err := localAgent(s.Agent, goarch)
	if err != nil {
		return nil, err
	}
	remote := ".cache/dsh-agent/" + sum[:16] + "/dsh-agent"
	if err := upload(c, local, remote, sum, where); err != nil {
		return nil, err
	}
	var scrub localexec.Settings
	if len(agentPart) > 0 {
		_ = json.Unmarshal(agentPart, &scrub)
	}
	// Without SSH_CLIENT (SSH_CONNECTION says the same): bash, as most
	// distributions build it, reads ~/.bashrc again for every command whose
	// environment has it, and a banner there would open each command's
	// output. The login shell that starts the agent has read it, and the
	// agent's commands inherit what it exported.
	mark, printMark := marker()
	cmd := printMark + " && exec env -u SSH_CLIENT -u SSH2_CLIENT"
	for _, kv := range remoteexec.ForwardedEnv(s.ForwardEnv, scrub) {
		cmd += " " + shellQuote(kv)
	}
	cmd += " ./" + remote + " --stdio"
	sess, err := c.NewSession()
	if err != nil {
		return nil, fmt.Errorf("ssh: %s: a session: %w", where, err)
	}
	stdin, err := sess.StdinPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		sess.Close()
		return nil, err
	}
	sess.Stderr = agentbin.Stderr{W: logOutput, Where: where, Mu: &logMu}
	if err := sess.Start(cmd); err != nil {
		sess.Close()
		return nil, fmt.Errorf("ssh: %s: starting the agent: %w", where, err)
	}
	rest, err := streamStart(ctx, stdout, mark, where)
	if err != nil {
		sess.Close()
		return nil, err
	}
	stop := make(chan struct{})
	go keepalive(c, time.Duration(max(s.KeepaliveMs, 100))*time.Millisecond, s.KeepaliveMs, stop)
	return &remoteexec.Session{
		Stream: pluginapi.Pipes(io.NopCloser(io.MultiReader(bytes.NewReader(rest), stdout)), stdin),
		Cleanup: func(ctx context.Context) error {
			close(stop)
			done := make(chan error, 1)
			go func() { done <- sess.Wait() }()
			select {
			case <-done:
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			sess.Close()
			return ignoreClosed(c.Close())
		},
		Where: where,
	}, nil
}

// streamStart reads the agent's session up to its marker, logging what
// came before, and returns what it read past it: the first bytes of the
// agent's stream. It gives up after dialTimeout, or when ctx ends.
func streamStart(ctx context.Context, stdout io.Reader, mark []byte, where string) ([]byte, error) {
	type read struct {
		before, after []byte
		total         int64
		err           error
	}
	done := make(chan read, 1)
	go func() {
		var r read
		r.before, r.total, r.after, r.err = readPast(stdout, mark)
		done <- r
	}()
	timer := time.NewTimer(dialTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		logBefore(where, "the agent's stream", r.before, r.total)
		if r.err != nil {
			return nil, fmt.Errorf("ssh: %s: starting the agent: %w", where, r.err)
		}
		return r.after, nil
	case <-timer.C:
		return nil, fmt.Errorf("ssh: %s: starting the agent: no marker of its stream within %s", where, dialTimeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("ssh: %s: starting the agent: %w", where, ctx.Err())
	}
}

// keepalive sends keepalive requests every interval (5 s when the
// setting is 0) and closes the connection when two in a row get no
// answer: calls in flight then fail, rather than wait on a dead peer.
func keepalive(c *ssh.Client, interval time.Duration, setting int64, stop <-chan struct{}) {
	if setting == 0 {
		interval = 5 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	missed := 0
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		go func() {
			_, _, err := c.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		select {
		case err := <-answered:
			if err != nil {
				c.Close()
				return
			}
			missed = 0
		case <-time.After(interval):
			if missed++; missed >= 2 {
				c.Close()
				return
			}
		case <-stop:
			return
		}
	}
}

// ignoreClosed drops the error of closing a connection closed already.
func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// output runs cmd in a session of its own and returns its stdout from its
// marker on; what the login printed before it is logged.
func output(c *ssh.Client, cmd, where string) (string, error) {
	s, err := c.NewSession()
	if err != nil {
		return "", err
	}
	defer s.Close()
	mark, printMark := marker()
	out, err := s.Output(printMark + " && " + cmd)
	before, total, after, merr := readPast(bytes.NewReader(out), mark)
	logBefore(where, "the answer to "+strconv.Quote(cmd), before, total)
	if merr != nil && err == nil {
		err = merr
	}
	return string(after), err
}

// localAgent is the agent binary to upload for goarch, and its SHA-256.
func localAgent(path, goarch string) (string, string, error) {
	path, err := agentbin.Find(path, goarch, "the target")
	if err != nil {
		return "", "", fmt.Errorf("ssh: %w", err)
	}
	sum, err := agentbin.Sum(path)
	if err != nil {
		return "", "", fmt.Errorf("ssh: %w", err)
	}
	return path, sum, nil
}

// upload puts the agent at remote (relative to the login's home), unless
// a file with its SHA-256 is there already, and checks what is there
// afterwards: a target whose copy differs gets this one.
func upload(c *ssh.Client, local, remote, sum, where string) error {
	check := agentbin.HashCommand(remote)
	out, _ := output(c, check, where)
	if strings.HasPrefix(out, sum) {
		return nil
	}
	if strings.HasPrefix(out, agentbin.NoHasher) {
		return fmt.Errorf("ssh: %s: the target has none of sha256sum, shasum and openssl, to check the agent's SHA-256 with: install one of them (coreutils has sha256sum)", where)
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := c.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	s.Stdin = f
	var stderr strings.Builder
	s.Stderr = &stderr
	if err := s.Run(agentbin.InstallCommand(remote)); err != nil {
		return fmt.Errorf("ssh: %s: uploading the agent to ~/%s: %v: %s", where, remote, err, strings.TrimSpace(stderr.String()))
	}
	if out, err := output(c, check, where); err != nil || !strings.HasPrefix(out, sum) {
		return fmt.Errorf("ssh: %s: the agent uploaded to ~/%s does not have its SHA-256 (%s): %q %v", where, remote, sum, strings.TrimSpace(out), err)
	}
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return agentbin.ShellQuote(s) }

// logOutput is where the plugin logs: its stderr, which go-plugin passes
// to the host's log. logf writes to it.
var (
	logMu     sync.Mutex
	logOutput io.Writer = os.Stderr
)

func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(logOutput, format, args...)
}
