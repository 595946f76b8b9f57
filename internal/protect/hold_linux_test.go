//go:build linux

package protect

import (
	"os"
	"path/filepath"
	"testing"
)

func missing(t *testing.T, root, rel string, dir bool) Target {
	return Target{Path: filepath.Join(root, rel), Root: root, How: ReadOnly, Missing: true, Dir: dir}
}

func TestPlaceholderIsRemovedByTheLastHolder(t *testing.T) {
	root := tree(t)
	tg := missing(t, root, ".mcp.json", true)
	a, err := Hold(tg)
	if err != nil || a == nil {
		t.Fatalf("Hold: %v %v", a, err)
	}
	if fi, err := os.Stat(tg.Path); err != nil || !fi.IsDir() {
		t.Fatalf("no placeholder directory: %v", err)
	}
	b, err := Hold(tg) // another sandbox's: takes the same one over
	if err != nil || b == nil {
		t.Fatalf("a second Hold: %v %v", b, err)
	}
	a.Release()
	if _, err := os.Stat(tg.Path); err != nil {
		t.Fatalf("removed while another holder covers it: %v", err)
	}
	if !b.Intact() {
		t.Error("the remaining holder's placeholder is not intact")
	}
	b.Release()
	b.Release() // safe twice
	if _, err := os.Lstat(tg.Path); !os.IsNotExist(err) {
		t.Errorf("the last holder left the placeholder: %v", err)
	}
}

func TestPlaceholderKeepsWhatTheUserWroteAndTheUsersOwnDirectory(t *testing.T) {
	root := tree(t, ".vscode/")
	if h, err := Hold(missing(t, root, ".vscode", true)); err != nil || h != nil {
		t.Fatalf("Hold over the user's own directory: %v %v, want nothing held", h, err)
	}
	tg := missing(t, root, ".claude", true)
	h, err := Hold(tg)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tg.Path, "settings.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.Release()
	if _, err := os.Stat(filepath.Join(tg.Path, "settings.json")); err != nil {
		t.Errorf("what the user wrote into the placeholder went: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".vscode")); err != nil {
		t.Errorf("the user's own directory went: %v", err)
	}
}

func TestPlaceholderRemovedOutsideIsNotIntact(t *testing.T) {
	root := tree(t, ".git/")
	tg := missing(t, root, ".git/info/attributes", false)
	tg.Path = filepath.Join(root, ".git/info")
	tg.Dir = true
	h, err := Hold(tg)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	defer h.Release()
	if !h.Intact() {
		t.Fatal("a new placeholder is not intact")
	}
	if err := os.Remove(tg.Path); err != nil {
		t.Fatal(err)
	}
	if h.Intact() {
		t.Error("a placeholder removed outside is still intact")
	}
}

func TestPlaceholderRefusesSymlinksOnTheWay(t *testing.T) {
	root := tree(t, "real/")
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := Hold(missing(t, root, "link/.mcp.json", true)); err == nil {
		t.Error("a placeholder was made through a symlink")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("made outside the root: %v", entries)
	}
}

func TestPlaceholderFileInsideARepository(t *testing.T) {
	root := tree(t, ".git/info/")
	tg := missing(t, root, ".git/info/attributes", false)
	h, err := Hold(tg)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(tg.Path); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Fatalf("not an empty file: %v %v", fi, err)
	}
	h.Release()
	if _, err := os.Lstat(tg.Path); !os.IsNotExist(err) {
		t.Errorf("left: %v", err)
	}
}

func TestPlaceholderWithContent(t *testing.T) {
	root := tree(t, ".git/")
	tg := missing(t, root, ".git/commondir", false)
	tg.Content = ".\n"
	h, err := Hold(tg)
	if err != nil || h == nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(tg.Path); err != nil || string(data) != ".\n" {
		t.Fatalf("placeholder holds %q (%v)", data, err)
	}
	again, err := Hold(tg)
	if err != nil || again == nil {
		t.Fatalf("a placeholder with its content is not taken over: %v %v", again, err)
	}
	again.Release()
	h.Release()
	if _, err := os.Lstat(tg.Path); !os.IsNotExist(err) {
		t.Errorf("left: %v", err)
	}
}
