package ssh_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// agent is dsh-agent, built static by TestMain.
var agent string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dsh-ssh-test-")
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
// unprivileged user.
func TestConformanceOverSSH(t *testing.T) {
	base := settingsJSON(t, target(t, map[string]any{"forwardEnv": pluginapitest.InheritedNames()}))
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor { return ssh.New() },
		pluginapitest.Options{Settings: base})
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
