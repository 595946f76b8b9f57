package ssh_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	xssh "golang.org/x/crypto/ssh"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/ssh"
)

// serverKey is the sshd's host key, from the known_hosts file .ci/sshd
// wrote.
func serverKey(t *testing.T) xssh.PublicKey {
	t.Helper()
	b, err := os.ReadFile(os.Getenv("DSH_TEST_SSH_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, key, _, _, err := xssh.ParseKnownHosts(b)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// runWithKnownHosts runs `true` on the target with known_hosts kh.
func runWithKnownHosts(t *testing.T, kh string) error {
	t.Helper()
	x := ssh.New()
	defer x.Close(t.Context())
	if err := x.Configure(t.Context(), []byte(settingsJSON(t, target(t, map[string]any{"knownHosts": kh})))); err != nil {
		t.Fatal(err)
	}
	_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
	return err
}

var keyscanLine = regexp.MustCompile(`ssh-keyscan [^>]*>> \S+`)

// A real sshd's unknown host key is refused with its fingerprint, the
// known_hosts file, and an ssh-keyscan line that, run, lets the executor
// in.
func TestAnUnknownHostKeyIsRefusedWithWhatToDo(t *testing.T) {
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	target(t, nil) // skipped without an sshd
	key := serverKey(t)
	err := runWithKnownHosts(t, kh)
	if err == nil {
		t.Fatal("an unknown host key was not refused")
	}
	t.Log(err)
	for _, want := range []string{key.Type() + " " + xssh.FingerprintSHA256(key), kh, "the host key is unknown", "only if they match"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q; want %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "handshake failed") {
		t.Errorf("refusal %q: the host key's refusal is no failed handshake", err)
	}
	line := keyscanLine.FindString(err.Error())
	if line == "" {
		t.Fatalf("refusal %q: no ssh-keyscan line", err)
	}
	if _, err := exec.LookPath("ssh-keyscan"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no ssh-keyscan under CI=true (.ci/run installs openssh-client) to run %q", line)
		}
		t.Skipf("no ssh-keyscan to run %q", line)
	}
	if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if err := runWithKnownHosts(t, kh); err != nil {
		t.Errorf("after %s: %v", line, err)
	}
}

// A changed host key is refused loudly, as a possible man in the middle,
// and with no line that adds the offered key.
func TestAChangedHostKeyIsRefusedLoudly(t *testing.T) {
	target(t, nil) // skipped without an sshd
	key := serverKey(t)
	b, err := os.ReadFile(os.Getenv("DSH_TEST_SSH_KNOWN_HOSTS"))
	if err != nil {
		t.Fatal(err)
	}
	// The same host, another ed25519 key.
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := xssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := strings.Cut(string(b), " ")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, append([]byte(host+" "), xssh.MarshalAuthorizedKey(other)...), 0o600); err != nil {
		t.Fatal(err)
	}
	err = runWithKnownHosts(t, kh)
	t.Log(err)
	for _, want := range []string{"THE HOST KEY HAS CHANGED", xssh.FingerprintSHA256(key), kh + ":1 holds", "man in the middle", "Do not add the offered key", xssh.FingerprintSHA256(other)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v; want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), ">>") {
		t.Errorf("refusal %q suggests adding the offered key", err)
	}
}

// A target with keys of two types, of which known_hosts holds one (the
// ed25519 key OpenSSH prefers, beside the ecdsa key a stock sshd has too,
// and which golang.org/x/crypto/ssh asks for first), is asked for the type
// known_hosts holds and let in, as OpenSSH does; it is not refused as
// changed.
func TestTheKnownKeyTypeIsAskedFor(t *testing.T) {
	dir := t.TempDir()
	ecdsa := filepath.Join(dir, "host_ecdsa_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ecdsa", "-N", "", "-f", ecdsa).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	// startSSHD's known_hosts holds the configuration's ed25519 key alone.
	d := startSSHD(t, "HostKey="+ecdsa, "HostKey="+filepath.Join(filepath.Dir(os.Getenv("DSH_TEST_SSH_CONFIG")), "host_key"))
	x := ssh.New()
	defer x.Close(t.Context())
	if err := x.Configure(t.Context(), []byte(settingsJSON(t, target(t, map[string]any{"address": d.addr(), "knownHosts": d.knownHosts})))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "echo in"}, nil)
	if err != nil || strings.TrimSpace(res.Stdout.Text) != "in" {
		t.Fatalf("with the target's ed25519 key known and an ecdsa key beside it: %+v, %v; want the command run", res, err)
	}
}
