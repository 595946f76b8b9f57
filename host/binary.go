package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dsh-host/dsh-host/registry"
)

// executorBinary is the file a launch of ex runs. A built-in executor is
// this program's running image. Any other binary must pass
// registry.CheckBinaryRoots against roots, and runs from its resolved path;
// one that does not pass runs only when ex.Checksum pins it, and then from
// a copy in private (a directory of the host's, mode 0700), made and
// checked against the pin in one pass: whoever can write where the binary
// lies cannot swap it between the check and the exec.
func executorBinary(ex Executor, roots []registry.Root, private string) (string, error) {
	if ex.Builtin {
		return selfImage(ex.Path), nil
	}
	real, err := registry.CheckBinaryRoots(ex.Path, roots, "a command")
	if err == nil || len(ex.Checksum) == 0 || !errors.Is(err, registry.ErrUnsafeBinary) {
		return real, err
	}
	copied, err := pinnedCopy(ex, private)
	if err != nil {
		return "", err
	}
	// The copy must be out of reach too (a workdir of /tmp would hold it).
	if _, err := registry.CheckBinaryRoots(copied, roots, "a command"); err != nil {
		return "", fmt.Errorf("the pinned executor %s runs from a private copy, and that copy is unsafe too: %w", ex.Path, err)
	}
	return copied, nil
}

// pinnedCopy copies ex's binary into dir, hashing what it copies, and
// refuses a copy whose SHA-256 is not ex.Checksum.
func pinnedCopy(ex Executor, dir string) (string, error) {
	src, err := os.Open(ex.Path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	path := filepath.Join(dir, "executor-"+filepath.Base(ex.Path))
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o500)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copying the pinned executor %s: %w", ex.Path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, ex.Checksum) {
		return "", fmt.Errorf("%w: %s is sha256:%s, the settings require sha256:%s", registry.ErrChecksumMismatch,
			ex.Path, hex.EncodeToString(got), hex.EncodeToString(ex.Checksum))
	}
	return path, nil
}

// checkWatchable refuses to watch path for a runtime that launches ex:
// a built-in executor has no binary a reload would read, and a binary that
// could be replaced by others is refused unless pinned (then every reload
// checks the pin).
func checkWatchable(ex Executor, path string, roots []registry.Root) error {
	if ex.Builtin {
		return fmt.Errorf("the built-in executor %s is this program, re-executed from its running image: a change to %s is never run, so there is nothing to watch", ex.Name, path)
	}
	if _, err := registry.CheckBinaryRoots(path, roots, "a command"); err != nil && (len(ex.Checksum) == 0 || !errors.Is(err, registry.ErrUnsafeBinary)) {
		return err
	}
	return nil
}
