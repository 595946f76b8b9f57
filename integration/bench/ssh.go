package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/dsh-host/dsh-host/host"
)

// sshTarget is the sshd the SSH step measures against: DSH_BENCH_SSH_ADDR,
// _USER, _KEY and _KNOWN_HOSTS (.ci/sshd starts one on 127.0.0.1 and says
// how); ok is false when one is missing.
func sshTarget() (addr, user, key, knownHosts string, ok bool) {
	addr, user = os.Getenv("DSH_BENCH_SSH_ADDR"), os.Getenv("DSH_BENCH_SSH_USER")
	key, knownHosts = os.Getenv("DSH_BENCH_SSH_KEY"), os.Getenv("DSH_BENCH_SSH_KNOWN_HOSTS")
	return addr, user, key, knownHosts, addr != "" && user != "" && key != "" && knownHosts != ""
}

// sshLatency is run(true) through the SSH executor's plugin (its stream
// established), against `bash -c true` the per-command ways: a new SSH
// connection per command (as `ssh host cmd` does; the figure with a
// target), and a new session on an established connection (the cheapest
// per-command way; informational): interleaved, in the same run.
func sshLatency(ctx context.Context, bin string, n, warmup int) ([]figure, error) {
	addr, user, key, knownHosts, ok := sshTarget()
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: ssh step NOT MEASURED: set DSH_BENCH_SSH_ADDR, _USER, _KEY and _KNOWN_HOSTS (.ci/sshd starts an sshd on 127.0.0.1)")
		return nil, nil
	}
	settings, _ := json.Marshal(map[string]any{"address": addr, "user": user, "identityFile": key, "knownHosts": knownHosts})
	h, err := host.Launch(ctx, host.Options{
		Executor: host.Executor{Name: "ssh", Path: filepath.Join(filepath.Dir(bin), "plugins", "dsh-executor-ssh")},
		Settings: settings,
	})
	if err != nil {
		return nil, err
	}
	defer h.Close(ctx)
	overSSH := h.Shell()
	if err := runTrue(ctx, overSSH); err != nil { // the session starts
		return nil, err
	}
	pem, err := os.ReadFile(key)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		return nil, err
	}
	check, err := knownhosts.New(knownHosts)
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "22")
	}
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: check}
	c, err := ssh.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	inSession := func(c *ssh.Client) error {
		s, err := c.NewSession()
		if err != nil {
			return err
		}
		defer s.Close()
		return s.Run("bash -c true")
	}
	perConnection := func() error {
		c, err := ssh.Dial("tcp", addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		return inSession(c)
	}
	times, err := interleave(n/5, warmup/5, func() error { return runTrue(ctx, overSSH) }, perConnection,
		func() error { return inSession(c) })
	if err != nil {
		return nil, err
	}
	executor, connection, session := median(times[0]), median(times[1]), median(times[2])
	tty, err := ttyKeystrokeVia(ctx, bin, "ssh", map[string]any{"address": addr, "user": user, "identityFile": key, "knownHosts": knownHosts}, n/5, warmup/5)
	if err != nil {
		return nil, err
	}
	return append(tty, []figure{
		{"ssh_connection_per_command_vs_executor_speedup", connection / executor, "x", ">=", 3},
		{"ssh_session_per_command_vs_executor_speedup", session / executor, "x", ">=", 0},
		{"ssh_true_median", executor, "ms", ">=", 0},
		{"ssh_connection_per_command_true_median", connection, "ms", ">=", 0},
		{"ssh_session_per_command_true_median", session, "ms", ">=", 0},
	}...), nil
}
