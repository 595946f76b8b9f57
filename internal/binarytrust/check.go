// Package binarytrust is the placement check of a binary that something
// of ours runs (an executor plugin, the agent a container executor
// mounts): it refuses one that someone other than its owner could replace
// before it runs. The registry (for plugins) and the container executor
// (for its agent) share it; neither's API is this package's.
package binarytrust

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Unsafe says which binary Check refused, and why.
type Unsafe struct {
	// Path is the binary, symlinks resolved.
	Path string
	// Reason says where the danger lies: "lies under the sandbox writable
	// root /w", "is beneath /d, a directory anyone may write (mode 0777)".
	Reason string
	// Who could replace the binary: "a sandboxed command", "another user".
	Who string
}

func (e *Unsafe) Error() string {
	return fmt.Sprintf("%s %s: %s could replace it", e.Path, e.Reason, e.Who)
}

// Check refuses, with an *Unsafe, a binary that could be replaced by
// someone other than its owner before it runs, and returns its path with
// symlinks resolved (a relative path is taken from the working
// directory). Other errors (the binary is missing, not a regular file)
// begin with the path. The binary is refused when:
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
//   - (on Unix) the file has more than one hard link and the caller's
//     user could write it: its other names, which no check sees, may lie
//     in a writable root.
//
// The caller runs (or mounts) the path it returns, not the one it gave: a
// link on the way could be repointed; the resolved path, every component
// of which passed the check, cannot be.
func Check(path string, writableRoots []string) (string, error) {
	roots := make([]Root, len(writableRoots))
	for i, r := range writableRoots {
		roots[i] = Root{Path: r, What: "the sandbox writable root %s"}
	}
	return CheckRoots(path, roots, "a sandboxed command")
}

// Root is a directory commands may write beneath, and what it is to them.
type Root struct {
	Path string
	// What names the rule in a refusal, %s standing for the root (with
	// the path it was given as, when that differs): "the sandbox writable
	// root %s", "%s, where container's commands can write". Empty: "a
	// writable root %s".
	What string
	// Who could replace a binary beneath it: "a command of bash-sandbox";
	// empty: CheckRoots' who.
	Who string
}

// CheckRoots is Check with roots that say what they are: a binary beneath
// one is refused as one that "lies under WHAT PATH: WHO could replace it".
func CheckRoots(path string, roots []Root, who string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: not a regular file", real)
	}
	if u := Beneath(real, roots, who); u != nil {
		return "", u
	}
	if err := checkOwnership(real); err != nil {
		return "", err
	}
	return real, nil
}

// Beneath is the refusal of real (absolute, symlinks resolved) when it lies
// beneath one of roots, nil when it does not.
func Beneath(real string, roots []Root, who string) *Unsafe {
	for _, root := range roots {
		if root.Path == "" {
			continue
		}
		r := resolveExisting(root.Path)
		if r == string(filepath.Separator) || filepath.Dir(r) == r {
			continue // the filesystem's root: see above
		}
		if within(real, r) {
			at := r
			if filepath.Clean(root.Path) != r {
				at += " (" + root.Path + ")"
			}
			what := cmp.Or(root.What, "a writable root %s")
			if !strings.Contains(what, "%s") {
				what += " %s"
			}
			reason := "lies under " + strings.Replace(what, "%s", at, 1)
			return &Unsafe{Path: real, Reason: reason, Who: cmp.Or(root.Who, who)}
		}
	}
	return nil
}

// within reports whether path is dir or lies beneath it; both are clean
// and absolute.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." &&
		!strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// resolveExisting is path, absolute, with the symlinks of its longest
// existing prefix resolved: a root that does not exist yet is still
// compared where it would be.
func resolveExisting(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	rest := ""
	for dir := abs; ; {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}
