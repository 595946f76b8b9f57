package integration

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pluginDirWith makes a plugin directory holding a copy of the standalone
// bash-local plugin as dsh-executor-NAME for each name (copies: the host
// refuses a binary with other hard links, and a link out of the directory).
func pluginDirWith(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		copyFile(t, bins.plugin, filepath.Join(dir, "dsh-executor-"+name))
	}
	return dir
}

// copyFile copies the executable src to dst, a new file.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// run takes --plugin-dir: a name found only there runs; without the flag it
// is not found.
func TestCLIRunPluginDir(t *testing.T) {
	tag := scenario(t)
	dir := pluginDirWith(t, "extra")
	r := dsh(t, tag, "run", "--plugin-dir", dir, "--executor", "extra", "--", "echo hi; exit 3")
	if r.code != 3 || lines(r.stdout)[0] != "hi" {
		t.Errorf("run --plugin-dir %s --executor extra: exit %d, stdout %q, stderr %q; want hi and exit 3", dir, r.code, r.stdout, r.stderr)
	}
	if r := dsh(t, tag, "run", "--executor", "extra", "--", "true"); r.code != 2 {
		t.Errorf("without --plugin-dir, extra was found: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A missing plugin directory is an error, however it was named: the flag's
// is a usage error (exit 2), the settings file's names its line (exit 125).
func TestCLIMissingPluginDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-plugins")
	for _, cmd := range [][]string{{"run", "--plugin-dir", missing, "--", "true"}, {"mcp", "--plugin-dir", missing}, {"plugins", "--plugin-dir", missing}, {"config", "--dump", "--plugin-dir", missing}} {
		r := dsh(t, scenario(t), cmd...)
		want := "dsh-host " + cmd[0] + ": --plugin-dir " + missing + ": no such directory"
		if l := lines(r.stderr); r.code != 2 || len(l) != 2 || l[0] != want {
			t.Errorf("%s --plugin-dir (missing): exit %d, stderr %q; want 2 and the line %q and a hint", cmd[0], r.code, r.stderr, want)
		}
	}
	settings := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(settings, []byte("host:\n  executor: bash-local\n  pluginDir: "+missing+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := dsh(t, scenario(t), "run", "--settings", settings, "--", "true")
	want := "dsh-host run: " + settings + ":3: host.pluginDir: " + missing + ": no such directory"
	if r.code != 125 || strings.TrimSuffix(r.stderr, "\n") != want {
		t.Errorf("host.pluginDir (missing): exit %d, stderr %q; want 125 and %q", r.code, r.stderr, want)
	}
}

// mcp takes --plugin-dir and --workdir: its commands, foreground and
// background, run in the workdir, not in the server's own directory.
func TestMCPWorkdirAndPluginDir(t *testing.T) {
	tag := scenario(t)
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cs := mcpSession(t, tag, "--plugin-dir", pluginDirWith(t, "extra"), "--executor", "extra", "--workdir", work)
	if text, isErr := call(t, cs, "bash", map[string]any{"command": "pwd -P; echo $" + tagVar}); isErr || text != work+"\n"+tag {
		t.Errorf("bash pwd: %q (error %v), want %s and the tag", text, isErr, work)
	}
	text, isErr := call(t, cs, "bash", map[string]any{"command": "pwd -P > where", "run_in_background": true})
	if isErr || !jobIDPattern.MatchString(text) {
		t.Fatalf("bash in the background: %q", text)
	}
	if text, _ := call(t, cs, "job_output", map[string]any{"job_id": jobIDPattern.FindString(text), "wait_ms": 5000}); !strings.Contains(text, "exited") {
		t.Fatalf("the job did not end: %q", text)
	}
	if got, err := os.ReadFile(filepath.Join(work, "where")); err != nil || string(got) != work+"\n" {
		t.Errorf("the background job ran elsewhere: %q, %v", got, err)
	}
	r := dsh(t, tag, "mcp", "--workdir", filepath.Join(work, "nope"))
	if r.code != 125 || !strings.Contains(r.stderr, filepath.Join(work, "nope")+": no such directory") {
		t.Errorf("mcp --workdir (missing): exit %d, stderr %q", r.code, r.stderr)
	}
}

// plugins shows one row per name, with the copy the name selects; a copy of
// the plugin directory that a built-in name shadows is noted, not listed as
// a second row of that name.
func TestCLIPluginsOneRowPerName(t *testing.T) {
	dir, err := filepath.EvalSymlinks(pluginDirWith(t, "bash-local", "extra"))
	if err != nil {
		t.Fatal(err)
	}
	r := dsh(t, scenario(t), "plugins", "--plugin-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	table, notes, _ := strings.Cut(r.stdout, "\n\n")
	rows := lines(table)
	if len(rows) != 5 || !strings.HasPrefix(rows[0], "NAME ") || !strings.Contains(rows[0], " SELECTS ") {
		t.Fatalf("table %q, want a header with SELECTS and one row for each of 4 names", table)
	}
	seen := map[string]string{}
	for _, row := range rows[1:] {
		name, _, _ := strings.Cut(row, " ")
		if seen[name] != "" {
			t.Errorf("two rows for %s:\n%s\n%s", name, seen[name], row)
		}
		seen[name] = row
	}
	if !strings.Contains(seen["bash-local"], bins.host+" (built in)") {
		t.Errorf("bash-local row %q, want the built-in copy selected", seen["bash-local"])
	}
	if !strings.Contains(seen["extra"], filepath.Join(dir, "dsh-executor-extra")) {
		t.Errorf("extra row %q, want the plugin directory's copy", seen["extra"])
	}
	want := "shadowed: bash-local " + filepath.Join(dir, "dsh-executor-bash-local") + " (sha256 "
	if l := lines(notes); len(l) != 1 || !strings.HasPrefix(l[0], want) || !strings.Contains(l[0], "selects the built-in") {
		t.Errorf("notes %q, want one line starting %q that says the name selects the built-in", notes, want)
	}
}
