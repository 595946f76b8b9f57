package ssh_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// agent is dsh-agent, built static by TestMain.
var agent string

func TestMain(m *testing.M) {
	dir, err := pluginapitest.BuildDir("dsh-ssh-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agent = filepath.Join(dir, "dsh-agent")
	cmd := exec.Command("go", "build", "-o", agent, "github.com/dsh-host/dsh-host/cmd/dsh-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dsh-agent:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// target is the sshd under test (.ci/sshd starts one on 127.0.0.1, for
// an unprivileged user, and sets these), as the executor's settings; the
// test is skipped without one, and fails under CI=true.
func target(t *testing.T, extra map[string]any) map[string]any {
	t.Helper()
	m := map[string]any{
		"address":      os.Getenv("DSH_TEST_SSH_ADDR"),
		"user":         os.Getenv("DSH_TEST_SSH_USER"),
		"identityFile": os.Getenv("DSH_TEST_SSH_KEY"),
		"knownHosts":   os.Getenv("DSH_TEST_SSH_KNOWN_HOSTS"),
		"agent":        agent,
	}
	for k, v := range m {
		if v == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no sshd: %s is not set (under CI=true .ci/sshd starts one and sets it)", k)
			}
			t.Skip("no sshd: set DSH_TEST_SSH_ADDR, _USER, _KEY and _KNOWN_HOSTS (.ci/sshd starts one)")
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func settingsJSON(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The suite passes with the commands on the far side of SSH, as an
// unprivileged user, checking liveness and leftovers there: through a
// second SSH executor to the same target, never from this machine's /proc.
func TestConformanceOverSSH(t *testing.T) {
	base := settingsJSON(t, target(t, map[string]any{"forwardEnv": pluginapitest.InheritedNames()}))
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor { return ssh.New() },
		pluginapitest.Options{Settings: base, Elsewhere: true})
}

// A host key that is not in known_hosts is refused: the executor never
// trusts a target it does not know.
func TestAnUnknownHostKeyIsRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	x := ssh.New()
	defer x.Close(t.Context())
	if err := x.Configure(t.Context(), []byte(settingsJSON(t, target(t, map[string]any{"knownHosts": empty})))); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "key is unknown") {
		t.Errorf("a target whose host key is not in known_hosts: %v; want a refusal", err)
	}
}

// A connection that drops under a run (its sshd session killed, as a
// restarted sshd or a broken network leaves it) settles the run at once
// with a fact saying so and the output that came before, kills what ran
// there, and is not reopened by itself: later calls say so, until the
// executor is configured again.
func TestADroppedConnectionIsNotReopenedByItself(t *testing.T) {
	settings := []byte(settingsJSON(t, target(t, nil)))
	user := os.Getenv("DSH_TEST_SSH_USER")
	x := ssh.New()
	defer x.Close(t.Context())
	ctx := t.Context()
	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	ran := runStarted(t, x, "echo started; sleep 1003")
	deadline := time.Now().Add(30 * time.Second)
	for len(userProcs(user, "sleep 1003")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run's sleep did not start within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	sessions := userProcs(user, "sshd: "+user)
	if len(sessions) == 0 {
		t.Fatalf("no sshd session process of %s: %v", user, userProcs(user, ""))
	}
	for pid := range sessions {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	select {
	case o := <-ran:
		if o.err != nil || o.res.ExitCode != nil || o.res.Stdout.Text != "started\n" ||
			!strings.Contains(o.res.Interrupted, "ended under the command") || !strings.Contains(o.res.Interrupted, "127.0.0.1") {
			t.Errorf("the run whose connection dropped: %+v, %v; want a result interrupted by the lost session, with its output so far", o.res, o.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the run whose connection dropped was still waiting 15s later")
	}
	for deadline := time.Now().Add(5 * time.Second); len(userProcs(user, "sleep 1003")) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run's sleep outlived its dropped connection by 5s: %v", userProcs(user, ""))
		}
	}
	_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if !errors.Is(err, pluginapi.ErrPluginUnavailable) || !strings.Contains(err.Error(), "not reopened") {
		t.Errorf("a call after the connection dropped: %v; want it refused, saying the session is not reopened", err)
	}
	if err := x.Configure(ctx, settings); err != nil {
		t.Fatal(err)
	}
	if res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo again"}, nil); err != nil || res.Stdout.Text != "again\n" {
		t.Errorf("a call after Configure: %q, %v; want a new connection to run it", res.Stdout.Text, err)
	}
}

// outcome is how a run settled.
type outcome struct {
	res pluginapi.RunResult
	err error
}

// runStarted runs command (which writes before anything else) in the
// background, watching its output live, and returns once the first output
// came; the run's outcome comes on the channel.
func runStarted(t *testing.T, x pluginapi.ShellExecutor, command string) <-chan outcome {
	t.Helper()
	ran := make(chan outcome, 1)
	started := make(chan struct{}, 1)
	go func() {
		res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: command}, func(pluginapi.Stream, []byte) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
		ran <- outcome{res, err}
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatalf("the output of %q did not come within 30s", command)
	}
	return ran
}
