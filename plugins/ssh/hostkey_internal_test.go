package ssh

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func newHostKey(t *testing.T) ssh.PublicKey {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// An unknown key is refused with its fingerprint, the file, and the line
// that adds it once checked; a changed one loudly, without such a line.
func TestHostKeyRefusalsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	offered, old := newHostKey(t), newHostKey(t)
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}

	check, err := checkHostKey(empty)
	if err != nil {
		t.Fatal(err)
	}
	for hostname, scan := range map[string]string{
		"127.0.0.1:2222":    "ssh-keyscan -p 2222 -t ed25519 127.0.0.1 >> " + empty,
		"target.example:22": "ssh-keyscan -t ed25519 target.example >> " + empty,
	} {
		err := check(hostname, remote, offered)
		for _, want := range []string{"the host key is unknown", "ssh-ed25519 " + ssh.FingerprintSHA256(offered), empty + " does not hold", "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub", "only if they match, add it: " + scan} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s, unknown: %v; want %q", hostname, err, want)
			}
		}
		if ke := (*knownhosts.KeyError)(nil); !errors.As(err, &ke) || len(ke.Want) != 0 {
			t.Errorf("%s, unknown: %v is not knownhosts' KeyError", hostname, err)
		}
	}

	changed := filepath.Join(dir, "changed hosts")
	if err := os.WriteFile(changed, []byte(knownhosts.Line([]string{"127.0.0.1:2222"}, old)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if check, err = checkHostKey(changed); err != nil {
		t.Fatal(err)
	}
	err = check("127.0.0.1:2222", remote, offered)
	for _, want := range []string{"THE HOST KEY HAS CHANGED", "offers ssh-ed25519 " + ssh.FingerprintSHA256(offered),
		changed + ":1 holds ssh-ed25519 " + ssh.FingerprintSHA256(old), "man in the middle", "Do not add the offered key",
		"ssh-keygen -R '[127.0.0.1]:2222' -f '" + changed + "'"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("changed: %v; want %q", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), ">>") || strings.Contains(err.Error(), "ssh-keyscan")) {
		t.Errorf("changed: %v; want no line that adds the offered key", err)
	}
	if ke := (*knownhosts.KeyError)(nil); !errors.As(err, &ke) || len(ke.Want) != 1 {
		t.Errorf("changed: %v is not knownhosts' KeyError", err)
	}
	if err := check("127.0.0.1:2222", remote, old); err != nil {
		t.Errorf("the known key: %v", err)
	}
}
