package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ExecutorPrefix starts the file name of every executor plugin binary in a
// plugin directory: dsh-executor-NAME.
const ExecutorPrefix = "dsh-executor-"

// Errors of the catalog.
var (
	// ErrNotInCatalog: no executor of that name in the plugin directory.
	ErrNotInCatalog = errors.New("registry: no such executor")
	// ErrOutsidePluginDir: a plugin binary (or what its link points to)
	// lies outside the plugin directory.
	ErrOutsidePluginDir = errors.New("registry: plugin outside the plugin directory")
	// ErrChecksumMismatch: a plugin binary is not the one the settings name.
	ErrChecksumMismatch = errors.New("registry: checksum mismatch")
)

// Entry is one executor plugin binary of a catalog.
type Entry struct {
	// Name is the executor's name, from its file name.
	Name string
	// Path is the binary, symlinks resolved, inside the plugin directory.
	Path string
	// SHA256 is the binary's checksum, in hex.
	SHA256 string
}

// Catalog lists the executor plugins in one directory.
type Catalog struct {
	dir     string
	entries map[string]Entry
}

// Discover reads dir: every regular, executable file named
// dsh-executor-NAME is an executor; a symlink is followed, and must end
// inside dir. Anything else is skipped, except a link that leads out of dir,
// which is an error.
func Discover(dir string) (*Catalog, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("registry: plugin directory: %w", err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	names, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("registry: plugin directory: %w", err)
	}
	c := &Catalog{dir: root, entries: map[string]Entry{}}
	for _, de := range names {
		name, ok := strings.CutPrefix(de.Name(), ExecutorPrefix)
		if !ok || name == "" {
			continue
		}
		path, err := c.resolve(filepath.Join(root, de.Name()))
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue // not an executable file
		}
		sum, err := FileSHA256(path)
		if err != nil {
			return nil, fmt.Errorf("registry: %s: %w", path, err)
		}
		c.entries[name] = Entry{Name: name, Path: path, SHA256: sum}
	}
	return c, nil
}

// resolve follows path's symlinks and refuses a target outside the
// directory.
func (c *Catalog) resolve(path string) (string, error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("registry: %s: %w", path, err)
	}
	if rel, err := filepath.Rel(c.dir, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s leads to %s, outside %s", ErrOutsidePluginDir, path, target, c.dir)
	}
	return target, nil
}

// Dir is the plugin directory, symlinks resolved.
func (c *Catalog) Dir() string { return c.dir }

// Entries lists the executors, by name.
func (c *Catalog) Entries() []Entry {
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the executor named name. When want is not empty, it is the
// SHA-256 (hex) the settings require, checked against the binary as it is
// now: a mismatch is refused with both sums.
func (c *Catalog) Lookup(name, want string) (Entry, error) {
	e, ok := c.entries[name]
	if !ok {
		return Entry{}, fmt.Errorf("%w: %q in %s", ErrNotInCatalog, name, c.dir)
	}
	if want == "" {
		return e, nil
	}
	got, err := VerifyChecksum(e.Path, want)
	if err != nil {
		return Entry{}, err
	}
	e.SHA256 = got
	return e, nil
}

// VerifyChecksum checks the file at path against want, the SHA-256 (hex)
// the settings require, and returns the file's own: a mismatch is refused
// with both sums.
func VerifyChecksum(path, want string) (string, error) {
	got, err := FileSHA256(path)
	if err != nil {
		return "", fmt.Errorf("registry: %s: %w", path, err)
	}
	if !strings.EqualFold(got, want) {
		return "", fmt.Errorf("%w: %s is sha256:%s, the settings require sha256:%s", ErrChecksumMismatch, path, got, want)
	}
	return got, nil
}

// FileSHA256 is the hex SHA-256 of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
