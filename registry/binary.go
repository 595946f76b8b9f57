package registry

import (
	"errors"
	"fmt"

	"github.com/dsh-host/dsh-host/internal/binarytrust"
)

// ErrUnsafeBinary: an executor binary lies where someone other than its
// owner could replace it: beneath a directory commands may write (a sandbox
// writable root), or on a path some component of which others may write.
// A host runs its executor unconfined, as its own user, so whoever can
// replace the binary runs code as that user at the next launch or reload.
var ErrUnsafeBinary = errors.New("registry: unsafe executor binary")

// UnsafeBinaryError says which binary CheckBinary refused, and why.
type UnsafeBinaryError struct {
	// Path is the binary, symlinks resolved.
	Path string
	// Reason says where the danger lies: "lies under the sandbox writable
	// root /w", "is in the directory /d, writable by others (drwxrwxrwx)".
	Reason string
	// Who could replace the binary: "a sandboxed command", "another user".
	Who string
}

func (e *UnsafeBinaryError) Error() string {
	return fmt.Sprintf("executor %s %s: %s could replace it; move it or pin its checksum in host.checksums",
		e.Path, e.Reason, e.Who)
}

// Is makes errors.Is(err, ErrUnsafeBinary) hold.
func (e *UnsafeBinaryError) Is(target error) bool { return target == ErrUnsafeBinary }

// CheckBinary refuses, with an *UnsafeBinaryError, an executor binary that
// could be replaced by someone other than its owner before the host runs
// it, and returns its path with symlinks resolved (a relative path is taken
// from the working directory). The binary is refused when:
//
//   - it lies beneath one of writableRoots, the directories commands may
//     write (the workdir they run in, a sandbox's writable roots), each
//     resolved through symlinks as far as it exists. The root "/" is not
//     counted: a sandbox never makes the whole filesystem writable.
//   - (on Unix) the file, or a directory on its path from / down, is
//     writable by its group or by others, except a directory with the
//     sticky bit (/tmp): there only an entry's owner may rename or remove
//     it, and every entry is owned as below.
//   - (on Unix) the file is owned by a user other than root and the
//     caller's (effective) user, or a directory on its path by a user
//     other than root and the binary's owner.
//   - (on Unix) the file has more than one hard link and the host's user
//     could write it: its other names, which no check sees, may lie in a
//     writable root.
//
// The caller launches the path it returns, not the one it gave: a link
// on the way could be repointed; the resolved path, every component of
// which passed the check, cannot be. (The check is internal/binarytrust's,
// which the container executor applies to its agent too.)
func CheckBinary(path string, writableRoots []string) (string, error) {
	return checked(binarytrust.Check(path, writableRoots))
}

// Root is a directory commands may write beneath, and what it is to them
// (its What and Who name the rule in a refusal).
type Root = binarytrust.Root

// CheckBinaryRoots is CheckBinary with roots that say what they are: a
// binary beneath one "lies under WHAT PATH: WHO could replace it"; who is
// the default Who.
func CheckBinaryRoots(path string, roots []Root, who string) (string, error) {
	return checked(binarytrust.CheckRoots(path, roots, who))
}

// BinaryBeneath is the *UnsafeBinaryError of a binary at real (absolute,
// symlinks resolved, as CheckBinary returns it) that lies beneath one of
// roots; nil when it lies beneath none.
func BinaryBeneath(real string, roots []Root, who string) error {
	if u := binarytrust.Beneath(real, roots, who); u != nil {
		return &UnsafeBinaryError{Path: u.Path, Reason: u.Reason, Who: u.Who}
	}
	return nil
}

func checked(real string, err error) (string, error) {
	if u, ok := errors.AsType[*binarytrust.Unsafe](err); ok {
		return "", &UnsafeBinaryError{Path: u.Path, Reason: u.Reason, Who: u.Who}
	}
	if err != nil {
		return "", fmt.Errorf("registry: executor %w", err)
	}
	return real, nil
}
