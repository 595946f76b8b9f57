//go:build linux

package bashsandbox_test

// Writable roots named through symlinks (issue 14): the sandbox makes
// writable where a root resolves to, not the name it was given, so a link
// to / is the whole filesystem (refused, as TestRootIsNoWorkspace's literal
// / is), and a link planted in a granted root is refused however that root
// was named.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashsandbox "github.com/dsh-host/dsh-host/plugins/bash-sandbox"
)

// writeEverywhere is a command that writes a file named escaped into each
// of dirs, empties each dir's victim, and writes / itself.
func writeEverywhere(dirs []string) string {
	var parts []string
	for _, d := range append([]string{"/"}, dirs...) {
		parts = append(parts, fmt.Sprintf("echo pwned > %s", filepath.Join(d, "dsh-escaped")))
		if d != "/" {
			parts = append(parts, ": > "+filepath.Join(d, "victim"))
		}
	}
	return strings.Join(parts, "; ")
}

// untouched fails the test, naming how, if writeEverywhere changed
// anything of dirs (or /); what it made is removed.
func untouched(t *testing.T, how string, dirs []string) {
	t.Helper()
	for _, d := range append([]string{"/"}, dirs...) {
		made := filepath.Join(d, "dsh-escaped")
		if _, err := os.Lstat(made); err == nil {
			t.Errorf("ESCAPE (%s): a confined command created %s", how, made)
			os.Remove(made)
		}
		if d == "/" {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(d, "victim")); err != nil || string(data) != "original\n" {
			t.Errorf("ESCAPE (%s): %s was changed: %q %v", how, filepath.Join(d, "victim"), data, err)
		}
	}
}

// upTo is a relative link target that climbs from dir (the link's own
// directory) to /.
func upTo(dir string) string {
	n := strings.Count(filepath.Clean(dir), string(filepath.Separator))
	return strings.Repeat("../", n+2) + "."
}

// A workdir or a policy's writable root that is a symlink resolving to /
// (directly, through a chain of links, or by a relative target) is the
// whole filesystem: the run is refused, and nothing outside the workspace
// is written.
func TestContainRootThroughSymlinks(t *testing.T) {
	links := []struct {
		name string
		make func(dir string) (string, error) // the link to use, made in dir
	}{
		{"link to /", func(dir string) (string, error) {
			return filepath.Join(dir, "root"), os.Symlink("/", filepath.Join(dir, "root"))
		}},
		{"chain of links to /", func(dir string) (string, error) {
			if err := os.Symlink("/", filepath.Join(dir, "c")); err != nil {
				return "", err
			}
			if err := os.Symlink(filepath.Join(dir, "c"), filepath.Join(dir, "b")); err != nil {
				return "", err
			}
			return filepath.Join(dir, "a"), os.Symlink("b", filepath.Join(dir, "a"))
		}},
		{"relative link to /", func(dir string) (string, error) {
			return filepath.Join(dir, "up"), os.Symlink(upTo(dir), filepath.Join(dir, "up"))
		}},
	}
	for _, l := range links {
		for _, as := range []string{"workdir", "policy root"} {
			t.Run(l.name+" as "+as, func(t *testing.T) {
				noneLeft(t)
				b := containBox(t)
				dir := t.TempDir()
				link, err := l.make(dir)
				if err != nil {
					t.Fatal(err)
				}
				if real, err := filepath.EvalSymlinks(link); err != nil || real != "/" {
					t.Fatalf("%s resolves to %q (%v), want /", link, real, err)
				}
				workdir := link
				if as == "policy root" {
					// The box's places outside, an executor with the link
					// as a root of its policy.
					b.x = newExecutor(t, bashsandbox.SandboxPolicy{WritableRoots: []string{link}})
					workdir = b.ws
				}
				how := fmt.Sprintf("%s %s -> /", as, link)
				res, err := tryRun(b, pluginapi.SandboxWorkspaceWrite, workdir, writeEverywhere(b.outside), 30*time.Second)
				t.Logf("%s: err %v, exit %s, stderr %.300q, facts %+v", how, err, exitOf(res), res.Stderr.Text, res.Sandbox)
				untouched(t, how, b.outside)
				if err != nil {
					t.Fatalf("%s: %v, want a result with a runner failure", how, err)
				}
				if res.Sandbox == nil || !strings.Contains(res.Sandbox.RunnerFailure, "whole filesystem") {
					t.Errorf("ESCAPE (%s): the link was taken as a writable root, not refused as the whole filesystem (whatever stopped the writes, if anything, was not this promise): exit %s, facts %+v", how, exitOf(res), res.Sandbox)
				}
			})
		}
	}
}

// A symlink a command plants in the workspace, when the workspace was
// named through a link of its own, is refused as a later run's workdir
// just as TestContainSymlinkAsWorkdir's is: the roots granted are
// remembered as they resolve, so the planted link is known to lie in one.
func TestContainSymlinkPlantedInALinkedWorkspace(t *testing.T) {
	noneLeft(t)
	b := containBox(t)
	ww := pluginapi.SandboxWorkspaceWrite
	named := filepath.Join(t.TempDir(), "ws-link")
	if err := os.Symlink(b.ws, named); err != nil {
		t.Fatal(err)
	}
	outside := b.outside[0]
	res, err := tryRun(b, ww, named, fmt.Sprintf("ln -s %s planted && echo planted", outside), 30*time.Second)
	if err != nil || res.Stdout.Text != "planted\n" {
		t.Fatalf("planting the link through %s: err %v, %+v", named, err, res)
	}
	if sb := res.Sandbox; sb == nil || len(sb.WritableRoots) == 0 || sb.WritableRoots[0] != b.ws {
		t.Errorf("the workspace named %s was granted as %+v, want %s", named, res.Sandbox, b.ws)
	}
	how := fmt.Sprintf("workdir %s/planted -> %s", named, outside)
	res, err = tryRun(b, ww, filepath.Join(named, "planted"), writeEverywhere([]string{outside}), 30*time.Second)
	t.Logf("%s: err %v, exit %s, stderr %.300q, facts %+v", how, err, exitOf(res), res.Stderr.Text, res.Sandbox)
	untouched(t, how, []string{outside})
	if err == nil && (res.Sandbox == nil || !strings.Contains(res.Sandbox.RunnerFailure, "passes through the symlink")) {
		t.Errorf("ESCAPE (%s): a run in a link planted in the workspace was not refused: exit %s, facts %+v", how, exitOf(res), res.Sandbox)
	}
}
