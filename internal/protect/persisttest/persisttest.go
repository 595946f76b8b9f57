// Package persisttest is the regression suite of persistence probes that
// every confining executor's tests run: each probe plants, through the
// executor, something that tools outside the sandbox would run later (a
// git hook, git configuration that runs commands, an agent host's or an
// editor's configuration, a shell rc file), then checks from outside, as
// the user, that nothing planted runs: git itself is run on the
// repository, bash reads the rc file.
//
// Plants are plain shell (bash, printf, mkdir, ln, mv, rm), with no git:
// a container image need not have it.
package persisttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// RunConfined runs command confined by the executor under test, in
// workspace-write, with workdir ws, whose protections were planned after
// the probe's setup. home says ws stands for the user's home directory
// (the probe of rc files): the executor must take ws as home.
type RunConfined func(t *testing.T, ws, command string, home bool) pluginapi.RunResult

// Probe is one persistence attack.
type Probe struct {
	Name string
	// Setup prepares ws (a fresh repository), outside the sandbox.
	Setup func(t *testing.T, ws string)
	// Plant runs confined; MARK in it stands for the marker file's path
	// (outside the workspace), which whatever was planted touches.
	Plant string
	// Fire does, outside the sandbox, what would run what was planted.
	Fire func(t *testing.T, ws string) error
	// Home: ws is the user's home directory for this probe.
	Home bool
}

// hook is a hook script that touches MARK.
const hook = `printf '#!/bin/sh\ntouch MARK\n'`

// alias appends a git alias with ! (a command) to a config file.
func alias(file string) string {
	return `printf '[alias]\n\tst = !touch MARK\n' >> ` + file
}

// gitInit is git init in plain shell: a repository git accepts.
const gitInit = `mkdir -p .git/objects .git/refs/heads .git/hooks && printf 'ref: refs/heads/main\n' > .git/HEAD && printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n' > .git/config`

// Probes are the attacks: each with its own fresh repository.
var Probes = []Probe{
	{Name: "hook", Plant: hook + ` > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`, Fire: commit("")},
	{Name: "hook in an empty hooks directory", Setup: func(t *testing.T, ws string) {
		removeAll(t, filepath.Join(ws, ".git/hooks"))
		mkdir(t, filepath.Join(ws, ".git/hooks"))
	}, Plant: hook + ` > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, Fire: commit("")},
	{Name: "hooks directory missing", Setup: func(t *testing.T, ws string) {
		removeAll(t, filepath.Join(ws, ".git/hooks"))
	}, Plant: `mkdir -p .git/hooks && ` + hook + ` > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`, Fire: commit("")},
	{Name: "core.fsmonitor", Plant: `printf '[core]\n\tfsmonitor = touch MARK; false\n' >> .git/config`, Fire: git("status")},
	{Name: "core.hooksPath", Plant: `mkdir -p hp && ` + hook + ` > hp/post-commit && chmod +x hp/post-commit && printf '[core]\n\thooksPath = hp\n' >> .git/config`, Fire: commit("")},
	{Name: "core.pager", Plant: `printf '[core]\n\tpager = touch MARK; cat\n' >> .git/config`, Fire: paged},
	{Name: "alias with !", Plant: alias(".git/config"), Fire: git("st")},
	{Name: "attributes with a filter driver", Setup: func(t *testing.T, ws string) {
		write(t, filepath.Join(ws, "f.txt"), "text\n")
	}, Plant: `printf '[filter "x"]\n\tclean = touch MARK; cat\n' >> .git/config; mkdir -p .git/info; printf '* filter=x\n' > .git/info/attributes`, Fire: git("add", "f.txt")},
	{Name: "submodule's repository", Setup: func(t *testing.T, ws string) {
		mkdir(t, filepath.Join(ws, ".git/modules"))
		run(t, ws, "git", "init", "-q", "--separate-git-dir", filepath.Join(ws, ".git/modules/m"), filepath.Join(ws, "sub"))
	}, Plant: hook + ` > .git/modules/m/hooks/post-commit && chmod +x .git/modules/m/hooks/post-commit`, Fire: commit("sub")},
	{Name: "nested repository", Setup: func(t *testing.T, ws string) {
		run(t, ws, "git", "init", "-q", filepath.Join(ws, "lib/inner"))
	}, Plant: hook + ` > lib/inner/.git/hooks/post-commit && chmod +x lib/inner/.git/hooks/post-commit`, Fire: commit("lib/inner")},
	{Name: ".mcp.json", Plant: `printf '{"mcpServers":{"x":{"command":"sh","args":["-c","touch MARK"]}}}' > .mcp.json`, Fire: config(".mcp.json")},
	{Name: ".vscode/tasks.json", Plant: `mkdir -p .vscode && printf '{"version":"2.0.0","tasks":[{"label":"x","command":"touch MARK","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`, Fire: config(".vscode/tasks.json")},
	{Name: ".claude/settings.json", Plant: `mkdir -p .claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch MARK"}]}]}}' > .claude/settings.json`, Fire: config(".claude/settings.json")},
	{Name: "shell rc file in a home", Home: true, Plant: `printf 'touch MARK\n' >> .bashrc`, Fire: func(t *testing.T, ws string) error {
		cmd := exec.Command("bash", "-i", "-c", "true")
		cmd.Dir, cmd.Env = ws, append(gitEnv(t), "HOME="+ws)
		_, _ = cmd.CombinedOutput()
		return nil
	}},
	// Ways around the protection.
	{Name: "hooks renamed, then made again", Plant: `mv .git/hooks .git/old-hooks; mkdir -p .git/hooks && ` + hook + ` > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`, Fire: commit("")},
	{Name: ".git renamed, then made again", Plant: `mv .git .git-old; ` + gitInit + ` && ` + hook + ` > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`, Fire: commit("")},
	{Name: ".git removed, then made again", Plant: `rm -rf .git; ` + gitInit + ` && ` + hook + ` > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`, Fire: commit("")},
	{Name: "config removed, then made again", Plant: `rm -f .git/config; printf '[core]\n\trepositoryformatversion = 0\n' > .git/config; ` + alias(".git/config"), Fire: git("st")},
	{Name: "config replaced by rename", Plant: `cp .git/config c && ` + alias("c") + ` && mv c .git/config`, Fire: git("st")},
	{Name: "commondir to another directory", Plant: `cp -r .git ../evil-common && printf '[alias]\n\tst = !touch MARK\n' >> ../evil-common/config; cp -r .git evil-common && printf '[alias]\n\tst = !touch MARK\n' >> evil-common/config && printf '../evil-common\n' > .git/commondir`, Fire: git("st")},
	{Name: "symlink to the config", Plant: `ln -s .git/config c && ` + alias("c"), Fire: git("st")},
	{Name: "hard link to the config", Plant: `ln .git/config c && ` + alias("c"), Fire: git("st")},
	{Name: ".mcp.json through a symlinked directory", Plant: `ln -s . d && printf '{"mcpServers":{"x":{"command":"sh","args":["-c","touch MARK"]}}}' > d/.mcp.json`, Fire: config(".mcp.json")},
}

// bareRepo makes, in plain shell, a bare repository at dir: what git
// finds in its working directory without any .git.
func bareRepo(dir string) string {
	return `mkdir -p ` + dir + `/objects ` + dir + `/refs/heads && printf 'ref: refs/heads/main\n' > ` + dir + `/HEAD`
}

// NewRepositories are the attacks that make a repository where none was
// when the executor planned its protections: in a new subdirectory, as a
// bare one, through a .git file or commondir, or moved in from TMPDIR.
// Each fires git in the directory a user would run it in.
var NewRepositories = []Probe{
	{Name: "a repository in a new subdirectory", Plant: `mkdir sub && cd sub && ` + gitInit + ` && ` + alias(".git/config"), Fire: gitIn("sub", "st")},
	{Name: "hooks of a repository in a new subdirectory", Plant: `mkdir sub && cd sub && ` + gitInit + ` && ` + hook + ` > .git/hooks/post-commit && chmod +x .git/hooks/post-commit`, Fire: commit("sub")},
	{Name: "a bare repository", Plant: bareRepo("b") + ` && ` + alias("b/config"), Fire: gitIn("b", "st")},
	{Name: "a bare repository, HEAD last", Plant: `mkdir -p b/objects b/refs/heads && ` + alias("b/config") + ` && printf 'ref: refs/heads/main\n' > b/HEAD`, Fire: gitIn("b", "st")},
	{Name: "a .git file naming a repository beside it", Plant: bareRepo("g") + `; ` + alias("g/config") + `; mkdir sub && printf 'gitdir: ../g\n' > sub/.git`, Fire: gitIn("sub", "st")},
	{Name: "commondir naming a directory of hooks and configuration", Plant: `mkdir -p c/objects c/refs/heads w && ` + alias("c/config") + ` && printf 'ref: refs/heads/main\n' > w/HEAD && printf '../c\n' > w/commondir`, Fire: gitIn("w", "st")},
	{Name: "a repository made in TMPDIR, moved in", Plant: `(cd "${TMPDIR:-/tmp}" && rm -rf r && mkdir r && cd r && ` + gitInit + ` && ` + alias(".git/config") + `) && mkdir sub && mv "${TMPDIR:-/tmp}/r/.git" sub/.git`, Fire: gitIn("sub", "st")},
	{Name: "a .git through a dangling symlink", Plant: bareRepo("g") + `; ` + alias("g/config") + `; mkdir sub && ln -s .git sub/link && printf 'gitdir: ../g\n' > sub/link`, Fire: gitIn("sub", "st")},
}

// Run runs every probe against the executor run confines with: each plants
// in a fresh repository, then fires outside, and the marker must not
// appear. The confined run may fail (a refusal); the test does not judge
// how, only that nothing planted runs.
func Run(t *testing.T, run RunConfined) {
	RunProbes(t, run, Probes)
}

// RunProbes runs probes as Run does.
func RunProbes(t *testing.T, run RunConfined, probes []Probe) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the persistence probes fire with git: %v", err)
	}
	for _, p := range probes {
		t.Run(p.Name, func(t *testing.T) {
			ws := NewRepo(t)
			if p.Setup != nil {
				p.Setup(t, ws)
			}
			mark := filepath.Join(t.TempDir(), "fired")
			res := run(t, ws, strings.ReplaceAll(p.Plant, "MARK", mark), p.Home)
			t.Logf("plant: %s, stderr %.400q", exitText(res), res.Stderr.Text)
			if err := p.Fire(t, ws); err != nil {
				t.Fatalf("firing outside: %v", err)
			}
			if _, err := os.Stat(mark); err == nil {
				t.Errorf("ESCAPE (persistence): what the confined command planted (%s) ran outside the sandbox", p.Name)
			}
		})
	}
}

// NewRepo is a fresh repository with one commit, in a directory of its
// own (symlinks resolved), removed when the test ends.
func NewRepo(t *testing.T) string {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run(t, ws, "git", "init", "-q", "-b", "main")
	run(t, ws, "git", "commit", "-q", "--allow-empty", "-m", "init")
	return ws
}

// gitEnv is the environment git runs in outside: none of the user's or
// the system's configuration, a known author.
func gitEnv(t *testing.T) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "PAGER=") {
			env = append(env, kv)
		}
	}
	return append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=dsh", "GIT_AUTHOR_EMAIL=dsh@example.invalid",
		"GIT_COMMITTER_NAME=dsh", "GIT_COMMITTER_EMAIL=dsh@example.invalid", "GIT_TERMINAL_PROMPT=0")
}

// run runs a command in dir outside the sandbox, which must succeed.
func run(t *testing.T, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, gitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v: %s", argv, err, out)
	}
}

// git fires by running git with args in the workspace (its outcome does
// not matter, only whether the marker appears).
func git(args ...string) func(t *testing.T, ws string) error {
	return func(t *testing.T, ws string) error {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = ws, gitEnv(t)
		out, err := cmd.CombinedOutput()
		t.Logf("outside: git %v: %v: %.300q", args, err, out)
		return nil
	}
}

// gitIn fires by running git with args in dir beneath the workspace,
// where a user would: git finds the repository there.
func gitIn(dir string, args ...string) func(t *testing.T, ws string) error {
	return func(t *testing.T, ws string) error {
		return git(args...)(t, filepath.Join(ws, dir))
	}
}

// paged fires the pager: git pages only to a terminal, so git runs on
// one (script(1) gives it one).
func paged(t *testing.T, ws string) error {
	cmd := exec.Command("script", "-qec", "git --paginate log -1", os.DevNull)
	cmd.Dir, cmd.Env = ws, gitEnv(t)
	out, err := cmd.CombinedOutput()
	t.Logf("outside: git --paginate log on a terminal: %v: %.300q", err, out)
	if errors.Is(err, exec.ErrNotFound) {
		return err
	}
	return nil
}

// commit fires the hooks by committing in dir beneath the workspace.
func commit(dir string) func(t *testing.T, ws string) error {
	return func(t *testing.T, ws string) error {
		return git("commit", "-q", "--allow-empty", "-m", "outside")(t, filepath.Join(ws, dir))
	}
}

// config fires an agent host's or an editor's configuration: what such a
// tool would run is taken from the file, and run here as that tool
// would, if the file is there and names it.
func config(name string) func(t *testing.T, ws string) error {
	return func(t *testing.T, ws string) error {
		data, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			return nil // not there: nothing to run
		}
		t.Logf("outside: %s holds %.300q", name, data)
		for _, field := range strings.Split(string(data), `"`) {
			if strings.HasPrefix(field, "touch ") {
				_ = exec.Command("sh", "-c", field).Run()
			}
		}
		return nil
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func removeAll(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exitText says how a run ended.
func exitText(res pluginapi.RunResult) string {
	if res.ExitCode != nil {
		return fmt.Sprintf("exit %d", *res.ExitCode)
	}
	return "signal " + res.Signal
}
