package protect

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Entry is a protected path, relative to each writable root.
type Entry struct {
	// Name is the path beneath a root, slash-separated (".mcp.json",
	// ".git/hooks").
	Name string
	// HomeOnly: the path runs code only in a home directory (a shell's rc
	// file): where it is missing, a placeholder is made only in a root
	// that is a home directory. Where it exists it is protected in every
	// root.
	HomeOnly bool
}

// Defaults are the paths protected in every writable root: anchored on
// Anthropic's sandbox-runtime's mandatory deny list and Codex's protected
// .git, plus the agent hosts' configurations that run commands. A
// repository's .git is handled apart (see gitTargets): only what runs
// code in it is protected, so commits, branches, rebases and stashes keep
// working.
var Defaults = []Entry{
	// Agent hosts and editors: each can name commands that run when a
	// session or a task starts.
	{Name: ".mcp.json"},
	{Name: ".claude"},
	{Name: ".codex"},
	{Name: ".cursor"},
	{Name: ".vscode"},
	{Name: ".idea"},
	// git reads .gitmodules from the work tree.
	{Name: ".gitmodules"},
	// Read from a home directory, by the shells, git and ripgrep.
	{Name: ".gitconfig", HomeOnly: true},
	{Name: ".bashrc", HomeOnly: true},
	{Name: ".bash_profile", HomeOnly: true},
	{Name: ".bash_login", HomeOnly: true},
	{Name: ".profile", HomeOnly: true},
	{Name: ".zshrc", HomeOnly: true},
	{Name: ".zprofile", HomeOnly: true},
	{Name: ".zshenv", HomeOnly: true},
	{Name: ".ripgreprc", HomeOnly: true},
}

// GitDir is the name of a repository's directory, whose code-running
// parts (GitEntries) are protected wherever a repository is found.
const GitDir = ".git"

// GitEntries are what git executes or takes commands from in a
// repository's directory: its hooks, its configuration (core.pager,
// core.fsmonitor, core.hooksPath, aliases with !, filter drivers), the
// attributes that select filter and diff drivers, the per-worktree
// configuration (config.worktree, read wherever extensions.worktreeConfig
// is on, as git sparse-checkout turns it on), and commondir, which
// would send git to another directory's hooks and configuration. A
// missing commondir's placeholder names the repository's own directory
// ("."): git refuses an empty one.
var GitEntries = []struct {
	Name    string
	Dir     bool
	Content string
}{{"hooks", true, ""}, {"config", false, ""}, {"info/attributes", false, ""}, {"commondir", false, ".\n"}, {"config.worktree", false, ""}}

// List is the protected list in force: the defaults less those
// unprotected by name, plus the extra paths of the settings.
type List struct {
	Entries []Entry
	// Unprotected are the defaults the settings took off, by name.
	Unprotected []string
}

// NewList makes the list of the settings: extra paths (relative to each
// root, or absolute), and the defaults to unprotect, each named exactly
// as Defaults names it (".vscode"; ".git" takes a repository's hooks and
// configuration off).
func NewList(extra, unprotect []string) (List, error) {
	var l List
	for _, u := range unprotect {
		if u != GitDir && !slices.ContainsFunc(Defaults, func(e Entry) bool { return e.Name == u }) {
			return List{}, fmt.Errorf("unprotectedPaths: %q is not a default protected path (the defaults: %s)", u, strings.Join(DefaultNames(), ", "))
		}
		if !slices.Contains(l.Unprotected, u) {
			l.Unprotected = append(l.Unprotected, u)
		}
	}
	for _, e := range Defaults {
		if !slices.Contains(l.Unprotected, e.Name) {
			l.Entries = append(l.Entries, e)
		}
	}
	for _, x := range extra {
		name, err := cleanName(x)
		if err != nil {
			return List{}, err
		}
		if !slices.ContainsFunc(l.Entries, func(e Entry) bool { return e.Name == name }) {
			l.Entries = append(l.Entries, Entry{Name: name})
		}
	}
	return l, nil
}

// Git says whether repositories' hooks and configuration are protected.
func (l List) Git() bool { return !slices.Contains(l.Unprotected, GitDir) }

// DefaultNames are the names of the defaults, .git first.
func DefaultNames() []string {
	names := []string{GitDir}
	for _, e := range Defaults {
		names = append(names, e.Name)
	}
	return names
}

// cleanName checks an extra protected path: absolute, or relative and
// staying beneath its root.
func cleanName(x string) (string, error) {
	if x == "" {
		return "", fmt.Errorf("protectedPaths: an empty path")
	}
	if path.IsAbs(x) {
		return path.Clean(x), nil
	}
	c := path.Clean(x)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("protectedPaths: %q leaves its root", x)
	}
	return c, nil
}
