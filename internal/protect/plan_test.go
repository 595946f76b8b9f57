package protect

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes the files and directories (a trailing /) of paths beneath
// a new root, symlinks resolved.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// byPath indexes a plan by path relative to root.
func byPath(root string, plan []Target) map[string]Target {
	out := map[string]Target{}
	for _, t := range plan {
		rel, _ := filepath.Rel(root, t.Path)
		out[rel] = t
	}
	return out
}

func defaults(t *testing.T) List {
	t.Helper()
	l, err := NewList(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestPlanProtectsWhatExistsAndHoldsThePlaceOfWhatDoesNot(t *testing.T) {
	root := tree(t, ".git/hooks/", ".git/config", ".git/HEAD", ".vscode/tasks.json", "src/main.go")
	plan := byPath(root, Plan([]string{root}, "/nonexistent-home", defaults(t)))

	want := map[string]Target{
		".git":           {How: Pin},
		".git/hooks":     {How: ReadOnly, Dir: true},
		".git/config":    {How: ReadOnly},
		".git/info":      {How: ReadOnly, Missing: true, Dir: true}, // attributes' first missing component
		".git/commondir": {How: ReadOnly, Missing: true, Content: ".\n"},
		// configuration where extensions.worktreeConfig is on
		".git/config.worktree": {How: ReadOnly, Missing: true},
		".vscode":              {How: ReadOnly, Dir: true},
		".mcp.json":            {How: ReadOnly, Missing: true, Dir: true},
		".claude":              {How: ReadOnly, Missing: true, Dir: true},
		".gitmodules":          {How: ReadOnly, Missing: true, Dir: true},
		".idea":                {How: ReadOnly, Missing: true, Dir: true},
		".codex":               {How: ReadOnly, Missing: true, Dir: true},
		".cursor":              {How: ReadOnly, Missing: true, Dir: true},
	}
	for rel, w := range want {
		got, ok := plan[rel]
		if !ok {
			t.Errorf("%s is not planned", rel)
			continue
		}
		if got.How != w.How || got.Missing != w.Missing || got.Dir != w.Dir || got.Root != root || got.Content != w.Content {
			t.Errorf("%s: planned %+v, want how %v missing %v dir %v content %q", rel, got, w.How, w.Missing, w.Dir, w.Content)
		}
	}
	for rel := range plan {
		if _, ok := want[rel]; !ok {
			t.Errorf("%s is planned, and is not protected", rel)
		}
	}
}

func TestPlanMakesRcFilesOnlyInAHome(t *testing.T) {
	home := tree(t, ".bashrc")
	other := tree(t)
	plan := byPath(home, Plan([]string{home}, home, defaults(t)))
	if got := plan[".bashrc"]; got.Missing || got.How != ReadOnly {
		t.Errorf("an existing .bashrc in the home: %+v, want read-only", got)
	}
	if got, ok := plan[".zshrc"]; !ok || !got.Missing {
		t.Errorf("a missing .zshrc in the home: %+v %v, want a placeholder", got, ok)
	}
	plan = byPath(other, Plan([]string{other}, home, defaults(t)))
	if got, ok := plan[".bashrc"]; ok {
		t.Errorf("a missing .bashrc outside the home is planned: %+v", got)
	}
	withRc := tree(t, ".profile")
	plan = byPath(withRc, Plan([]string{withRc}, home, defaults(t)))
	if got, ok := plan[".profile"]; !ok || got.Missing {
		t.Errorf("an existing .profile outside the home: %+v %v, want read-only", got, ok)
	}
}

func TestPlanCoversSymlinks(t *testing.T) {
	root := tree(t, "elsewhere/settings.json")
	if err := os.Symlink("elsewhere", filepath.Join(root, ".claude")); err != nil {
		t.Fatal(err)
	}
	plan := byPath(root, Plan([]string{root}, "", defaults(t)))
	if got := plan[".claude"]; got.How != Cover {
		t.Errorf(".claude, a symlink: %+v, want covered", got)
	}
}

func TestPlanFindsNestedRepositoriesAndSubmodules(t *testing.T) {
	root := tree(t, ".git/hooks/", ".git/config", ".git/modules/m/hooks/", ".git/modules/m/config",
		"lib/inner/.git/hooks/", "lib/inner/.git/config", "a/b/c/deep/.git/config", "node_modules/x/.git/config")
	plan := byPath(root, Plan([]string{root}, "", defaults(t)))
	for _, rel := range []string{".git/modules/m/hooks", ".git/modules/m/config", "lib/inner/.git", "lib/inner/.git/hooks", "lib/inner/.git/config"} {
		if _, ok := plan[rel]; !ok {
			t.Errorf("%s is not planned", rel)
		}
	}
	for _, rel := range []string{"a/b/c/deep/.git/config", "node_modules/x/.git/config"} {
		if _, ok := plan[rel]; ok {
			t.Errorf("%s is planned: beyond the search's depth, or in a dependency tree", rel)
		}
	}
}

func TestPlanFollowsAWorktreesGitFile(t *testing.T) {
	root := tree(t, "main/.git/hooks/", "main/.git/config", "main/.git/worktrees/wt/commondir", "wt/")
	if err := os.WriteFile(filepath.Join(root, "main/.git/worktrees/wt/commondir"), []byte("../..\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wt/.git"), []byte("gitdir: "+filepath.Join(root, "main/.git/worktrees/wt")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(root, "wt")
	plan := byPath(root, Plan([]string{wt, root}, "", defaults(t)))
	for rel, how := range map[string]How{"wt/.git": ReadOnly, "main/.git/worktrees/wt": Pin, "main/.git/hooks": ReadOnly, "main/.git/config": ReadOnly} {
		if got, ok := plan[rel]; !ok || got.How != how {
			t.Errorf("%s: %+v %v, want how %v", rel, got, ok, how)
		}
	}
}

func TestPlanOrdersMountsBeneathTheirParents(t *testing.T) {
	root := tree(t, ".git/hooks/", ".git/config")
	plan := Plan([]string{root}, "", defaults(t))
	at := func(rel string) int {
		return slices.IndexFunc(plan, func(t Target) bool { return t.Path == filepath.Join(root, rel) })
	}
	if at(".git") < 0 || at(".git") > at(".git/hooks") || at(".git") > at(".git/config") {
		t.Errorf(".git is not pinned before its hooks and config are mounted: %+v", plan)
	}
}

func TestListTakesExtraPathsAndUnprotectsOnlyDefaultsByName(t *testing.T) {
	l, err := NewList([]string{"Makefile.local", "/abs/tools"}, []string{".vscode", ".git"})
	if err != nil {
		t.Fatal(err)
	}
	root := tree(t, ".vscode/", ".git/hooks/", "Makefile.local")
	plan := byPath(root, Plan([]string{root}, "", l))
	for _, rel := range []string{".vscode", ".git", ".git/hooks"} {
		if _, ok := plan[rel]; ok {
			t.Errorf("%s is planned though unprotected", rel)
		}
	}
	if _, ok := plan["Makefile.local"]; !ok {
		t.Error("an extra protected path is not planned")
	}
	if !slices.Equal(l.Unprotected, []string{".vscode", ".git"}) {
		t.Errorf("unprotected %v", l.Unprotected)
	}
	for _, bad := range [][2][]string{{nil, {".vs"}}, {nil, {"*"}}, {{"../up"}, nil}, {{""}, nil}} {
		if _, err := NewList(bad[0], bad[1]); err == nil {
			t.Errorf("NewList(%q, %q) is taken", bad[0], bad[1])
		}
	}
}
