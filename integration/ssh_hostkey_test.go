package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	xssh "golang.org/x/crypto/ssh"
)

// dsh-host run with the SSH executor, against a target whose host key is
// not in known_hosts, is refused with the key's fingerprint, the file and
// the ssh-keyscan line that adds it, through the plugin and the CLI (the
// sshd .ci/sshd starts; skipped without one, failed under CI=true).
func TestSSHUnknownHostKeyRefusedThroughTheCLI(t *testing.T) {
	env := map[string]string{}
	for _, k := range []string{"DSH_TEST_SSH_ADDR", "DSH_TEST_SSH_USER", "DSH_TEST_SSH_KEY", "DSH_TEST_SSH_KNOWN_HOSTS"} {
		if env[k] = os.Getenv(k); env[k] == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("no sshd: %s is not set (under CI=true .ci/sshd starts one and sets it)", k)
			}
			t.Skipf("no sshd: %s is not set (.ci/sshd starts one)", k)
		}
	}
	b, err := os.ReadFile(env["DSH_TEST_SSH_KNOWN_HOSTS"])
	if err != nil {
		t.Fatal(err)
	}
	_, _, key, _, _, err := xssh.ParseKnownHosts(b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyFile(t, bins.ssh, filepath.Join(dir, "dsh-executor-ssh"))
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	yaml := "host:\n  pluginDir: " + dir + "\nshell:\n" +
		"  address: " + env["DSH_TEST_SSH_ADDR"] + "\n  user: " + env["DSH_TEST_SSH_USER"] + "\n" +
		"  identityFile: " + env["DSH_TEST_SSH_KEY"] + "\n  knownHosts: " + empty + "\n  agent: " + bins.agent + "\n"
	if err := os.WriteFile(settings, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(env["DSH_TEST_SSH_ADDR"], ":")
	r := dsh(t, scenario(t), "run", "--executor", "ssh", "--settings", settings, "--", "true")
	t.Log(r.stderr)
	for _, want := range []string{
		key.Type() + " " + xssh.FingerprintSHA256(key),
		empty,
		"ssh-keyscan -p " + port + " -t ed25519 " + host + " >> " + empty,
	} {
		if r.code == 0 || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr %q; want a refusal with %q", r.code, r.stderr, want)
		}
	}
}
