package agentbin

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
)

// Sum is the SHA-256 of the file at path, in hex: what a target's copy of
// the agent must have.
func Sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the agent: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("the agent %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// NoHasher is what HashCommand prints where the target has no tool for a
// SHA-256.
const NoHasher = "dsh: no sha256 tool"

// HashCommand is a shell command that prints the SHA-256 of the target's
// file first, in hex, with the first tool the target has (sha256sum,
// shasum, openssl), or NoHasher.
func HashCommand(file string) string {
	f := ShellQuote(file)
	return "if command -v sha256sum >/dev/null 2>&1; then sha256sum " + f + "; " +
		"elif command -v shasum >/dev/null 2>&1; then shasum -a 256 " + f + "; " +
		"elif command -v openssl >/dev/null 2>&1; then openssl dgst -sha256 -r " + f + "; " +
		"else echo '" + NoHasher + "'; fi 2>/dev/null"
}

// InstallCommand is a shell command that writes its stdin to file on the
// target, private to its user (0700 in a 0700 directory), through a
// temporary name renamed when complete: an interrupted upload never leaves
// a file at file.
func InstallCommand(file string) string {
	dir, tmp := file[:max(strings.LastIndexByte(file, '/'), 0)], file+".part"
	cmd := "umask 077 && "
	if dir != "" {
		cmd += "mkdir -p " + ShellQuote(dir) + " && "
	}
	return cmd + "cat > " + ShellQuote(tmp) + " && chmod 700 " + ShellQuote(tmp) + " && mv -f " + ShellQuote(tmp) + " " + ShellQuote(file)
}

// ShellQuote quotes s for a POSIX shell.
func ShellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
