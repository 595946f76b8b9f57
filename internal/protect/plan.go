package protect

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// How says how a mount protects a target.
type How int

const (
	// ReadOnly binds the path onto itself, read-only: it cannot be
	// written, renamed or removed, and nothing can be made beneath it.
	ReadOnly How = iota + 1
	// Pin binds the path onto itself, writable: what is in it stays
	// writable, but it cannot be renamed or removed, so the protected
	// paths beneath it stay where they are (a repository's .git).
	Pin
	// Cover mounts an empty read-only file over a symlink, which no
	// mount can bind: the link cannot be removed, replaced or written
	// through.
	Cover
)

// Target is one protected path of a plan.
type Target struct {
	// Path is where the mount goes, absolute, beneath Root.
	Path string
	Root string
	How  How
	// Missing: nothing is at Path; a placeholder (a directory when Dir,
	// else an empty file) must hold the place for the mount. Dir is also
	// what an existing path was, for a placeholder should it go before
	// the mount is made.
	Missing bool
	Dir     bool
	// Content is what a placeholder file holds (one git would otherwise
	// refuse to read).
	Content string `json:",omitempty"`
}

// Depth bounds the search for repositories beneath a root (a root's own
// entries are at depth 1), and maxDirs the directories it reads: the
// search runs once per sandbox, before its first command.
const (
	Depth   = 3
	maxDirs = 4096
)

// skipDirs are not searched for repositories: dependency trees, never
// a repository's work tree.
var skipDirs = []string{"node_modules", ".venv", "vendor", "target", "__pycache__"}

// Plan is what protects l in each of roots (absolute, symlinks resolved):
// each path of l that exists, the first missing component of each that
// does not, and the code-running parts of every repository found in the
// roots (see GitEntries); home is the user's home directory, where rc
// files that are missing get their placeholders. Targets come sorted so
// that a mount comes after any it lies beneath; a path beneath two roots
// is planned once.
func Plan(roots []string, home string, l List) []Target {
	var out []Target
	add := func(t Target, ok bool) {
		if ok && !slices.ContainsFunc(out, func(o Target) bool { return o.Path == t.Path }) {
			out = append(out, t)
		}
	}
	for _, root := range roots {
		for _, e := range l.Entries {
			rel := e.Name
			if filepath.IsAbs(rel) {
				r, err := filepath.Rel(root, rel)
				if err != nil || r == "." || r == ".." || strings.HasPrefix(r, "../") {
					continue
				}
				rel = r
			}
			add(planPath(root, root, rel, e.HomeOnly && root != home, true))
		}
		if l.Git() {
			for _, repo := range repositories(root) {
				for _, t := range gitTargets(root, repo, roots) {
					add(t, true)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Target) int {
		return strings.Count(a.Path, "/") - strings.Count(b.Path, "/")
	})
	return out
}

// planPath plans rel beneath dir (itself beneath root): the path, or its
// first missing component (nothing when skipMissing), or the first
// symlink on its way. A placeholder for a missing last component is a
// directory when dir says so, as every intermediate one is.
func planPath(root, base, rel string, skipMissing, dir bool) (Target, bool) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	cur := base
	for i, part := range parts {
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		last := i == len(parts)-1
		switch {
		case os.IsNotExist(err):
			if skipMissing {
				return Target{}, false
			}
			return Target{Path: next, Root: root, How: ReadOnly, Missing: true, Dir: !last || dir}, true
		case err != nil:
			// Unreadable: nothing of ours can be made there either, and
			// a mount needs to see it. Protect what is there.
			return Target{Path: next, Root: root, How: ReadOnly}, true
		case fi.Mode()&os.ModeSymlink != 0:
			return Target{Path: next, Root: root, How: Cover}, true
		case last || !fi.IsDir():
			return Target{Path: next, Root: root, How: ReadOnly, Dir: fi.IsDir()}, true
		}
		cur = next
	}
	return Target{}, false
}

// gitTargets protects the repository whose .git is at gitPath: a .git
// directory is pinned and its GitEntries made read-only; a .git file (a
// worktree's, a submodule's) is made read-only, and so are the entries
// of the directory it names and of that one's common directory, where
// they lie beneath one of roots. The repositories of submodules, in
// modules/, are protected as the repository itself is.
func gitTargets(root, gitPath string, roots []string) []Target {
	fi, err := os.Lstat(gitPath)
	if err != nil {
		return nil
	}
	var out []Target
	var dirs []string
	switch {
	case fi.IsDir():
		out = append(out, Target{Path: gitPath, Root: root, How: Pin})
		dirs = append(dirs, gitPath)
	case fi.Mode().IsRegular():
		out = append(out, Target{Path: gitPath, Root: root, How: ReadOnly})
		if gd := gitdirOf(gitPath); gd != "" {
			dirs = append(dirs, gd)
			if common := commonDirOf(gd); common != "" {
				dirs = append(dirs, common)
			}
		}
	case fi.Mode()&os.ModeSymlink != 0:
		if real, err := filepath.EvalSymlinks(gitPath); err == nil {
			dirs = append(dirs, real)
		}
	}
	for len(dirs) > 0 {
		d := dirs[0]
		dirs = dirs[1:]
		r := rootOf(d, roots)
		if r == "" {
			continue // read-only already
		}
		if d != gitPath && !slices.ContainsFunc(out, func(t Target) bool { return t.Path == d }) {
			if st, err := os.Lstat(d); err == nil && st.IsDir() {
				out = append(out, Target{Path: d, Root: r, How: Pin})
			}
		}
		for _, e := range GitEntries {
			if t, ok := planPath(r, d, e.Name, false, e.Dir); ok {
				if t.Missing && t.Path == filepath.Join(d, e.Name) {
					t.Content = e.Content
				}
				out = append(out, t)
			}
		}
		// Submodules' repositories.
		if mods, err := os.ReadDir(filepath.Join(d, "modules")); err == nil && strings.Count(d, "/") < strings.Count(gitPath, "/")+8 {
			for _, m := range mods {
				if m.IsDir() {
					dirs = append(dirs, filepath.Join(d, "modules", m.Name()))
				}
			}
		}
	}
	return out
}

// gitdirOf is the directory a .git file names ("gitdir: PATH"), symlinks
// resolved, or "".
func gitdirOf(gitFile string) string {
	f, err := os.Open(gitFile)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(gitFile), gd)
	}
	real, err := filepath.EvalSymlinks(gd)
	if err != nil {
		return ""
	}
	return real
}

// commonDirOf is the common directory a worktree's git directory names
// (its commondir file), symlinks resolved, or "".
func commonDirOf(gitDir string) string {
	data, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(data))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	real, err := filepath.EvalSymlinks(c)
	if err != nil {
		return ""
	}
	return real
}

// rootOf is the root of roots that path lies beneath, or "".
func rootOf(path string, roots []string) string {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return r
		}
	}
	return ""
}

// repositories are the .git entries in root and beneath it, to Depth,
// outside skipDirs and symlinks, reading at most maxDirs directories.
func repositories(root string) []string {
	var found []string
	type dir struct {
		path  string
		depth int
	}
	queue := []dir{{root, 0}}
	for read := 0; len(queue) > 0 && read < maxDirs; read++ {
		d := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(d.path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if name == GitDir {
				found = append(found, filepath.Join(d.path, name))
				continue
			}
			if e.IsDir() && d.depth+1 < Depth && !slices.Contains(skipDirs, name) {
				queue = append(queue, dir{filepath.Join(d.path, name), d.depth + 1})
			}
		}
	}
	return found
}

// Home is the user's home directory, symlinks resolved ("" when there is
// none): the root where missing rc files get placeholders.
func Home() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(home); err == nil {
		return real
	}
	return home
}
