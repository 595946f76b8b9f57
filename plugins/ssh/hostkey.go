package ssh

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// hostKeyError is a refused host key, said so that the user knows what to
// do: an unknown key with its fingerprint and the ssh-keyscan line that
// adds it once checked; a changed one loudly, with no line that adds it.
type hostKeyError struct {
	msg string
	err error // knownhosts' own: a *knownhosts.KeyError or *knownhosts.RevokedError
}

func (e *hostKeyError) Error() string { return e.msg }
func (e *hostKeyError) Unwrap() error { return e.err }

// checkHostKey is knownhosts' check of the host key against the file kh,
// its refusals explained (hostKeyError).
func checkHostKey(kh string) (ssh.HostKeyCallback, error) {
	check, err := knownhosts.New(kh)
	if err != nil {
		return nil, err
	}
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		err := check(hostname, remote, key)
		if err == nil {
			return nil
		}
		return explainHostKey(err, hostname, key, kh)
	}, nil
}

// explainHostKey says why knownhosts refused key, offered by hostname
// (host:port), against the file kh.
func explainHostKey(err error, hostname string, key ssh.PublicKey, kh string) error {
	offered := key.Type() + " " + ssh.FingerprintSHA256(key)
	var revoked *knownhosts.RevokedError
	if errors.As(err, &revoked) {
		return &hostKeyError{fmt.Sprintf("the host key %s is revoked (%s:%d); refused", offered, revoked.Revoked.Filename, revoked.Revoked.Line), err}
	}
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) {
		return err
	}
	host, port, splitErr := net.SplitHostPort(hostname)
	if splitErr != nil {
		host, port = hostname, "22"
	}
	if len(ke.Want) > 0 {
		var held []string
		for _, w := range ke.Want {
			held = append(held, fmt.Sprintf("%s:%d holds %s %s", w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key)))
		}
		return &hostKeyError{fmt.Sprintf("WARNING: THE HOST KEY HAS CHANGED: the target offers %s, but %s for it; refused. "+
			"Someone may be intercepting the connection (a man in the middle), or the target's host key was replaced. "+
			"Do not add the offered key: ask the target's administrator whether its key changed, and what its fingerprint is; "+
			"only if it matches %s, remove the old entry (ssh-keygen -R %s -f %s) and add the new one",
			offered, strings.Join(held, ", "), ssh.FingerprintSHA256(key), shellWord(knownhosts.Normalize(hostname)), shellWord(kh)), err}
	}
	short := keyscanType(key.Type())
	scan := "ssh-keyscan"
	if port != "22" {
		scan += " -p " + port
	}
	scan += " -t " + short + " " + shellWord(host)
	onTarget := "on the target, ssh-keygen -lf on its host key's .pub file prints it"
	if pub := targetHostKey(short); pub != "" {
		onTarget = "on the target, ssh-keygen -lf " + pub + " prints it"
	}
	return &hostKeyError{fmt.Sprintf("the host key is unknown: the target offers %s, which %s does not hold; refused. "+
		"Check that fingerprint against the target's own (%s), and only if they match, add it: %s >> %s",
		offered, kh, onTarget, scan, shellWord(kh)), err}
}

// keyscanType is ssh-keyscan -t's name for a key type.
func keyscanType(keyType string) string {
	switch {
	case keyType == ssh.KeyAlgoED25519:
		return "ed25519"
	case keyType == ssh.KeyAlgoRSA:
		return "rsa"
	case strings.HasPrefix(keyType, "ecdsa-sha2-"):
		return "ecdsa"
	case keyType == ssh.KeyAlgoSKED25519:
		return "ed25519-sk"
	case keyType == ssh.KeyAlgoSKECDSA256:
		return "ecdsa-sk"
	}
	return keyType
}

// targetHostKey is where OpenSSH's sshd keeps the public host key of
// ssh-keyscan's type short; "" for a type it has no default file of.
func targetHostKey(short string) string {
	switch short {
	case "ed25519", "rsa", "ecdsa":
		return "/etc/ssh/ssh_host_" + short + "_key.pub"
	}
	return ""
}

// shellWord is s as one word of a POSIX shell, quoted (shellQuote) only
// when it needs it: a line that reads as one would type it.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return s
	}
	return shellQuote(s)
}
