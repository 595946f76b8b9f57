package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// refused is how a write outside the sandbox's roots fails: on the read-only
// mounts, or by Landlock.
var refused = regexp.MustCompile(`Read-only file system|Permission denied`)

// dsh-host run --executor bash-sandbox confines the command to its workdir
// and says so in --json: the mode, what was enforced, and the likely
// denial with its evidence.
func TestRunSandboxedJSON(t *testing.T) {
	tag := scenario(t)
	ws, outside := t.TempDir(), filepath.Join(t.TempDir(), "escaped")
	r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--workdir", ws, "--json", "--",
		"echo in > inside && touch "+outside)
	var res struct {
		ExitCode *int                    `json:"exitCode"`
		Sandbox  *pluginapi.SandboxFacts `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	if res.ExitCode == nil || *res.ExitCode != 1 || r.code != 1 {
		t.Errorf("exit %v (dsh-host %d), want 1", res.ExitCode, r.code)
	}
	sb := res.Sandbox
	if sb == nil || sb.Mode != pluginapi.SandboxWorkspaceWrite || !sb.LikelyDenial ||
		len(sb.Evidence) != 1 || !refused.MatchString(sb.Evidence[0]) ||
		!strings.Contains(strings.Join(sb.Enforced, " "), "landlock-fs") {
		t.Errorf("sandbox facts %+v", sb)
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		t.Error("the write inside the workdir did not happen")
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the write outside the workdir happened")
	}
}

// --sandbox picks the mode; the settings file's sandbox section sets the
// default and is checked against the executor's schema.
func TestRunSandboxModes(t *testing.T) {
	tag := scenario(t)
	ws := t.TempDir()
	if r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--sandbox", "read-only", "--workdir", ws, "--", "touch f"); r.code != 1 ||
		!refused.MatchString(r.stderr) {
		t.Errorf("read-only: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	outside := filepath.Join(t.TempDir(), "free")
	if r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--sandbox", "danger-full-access", "--workdir", ws, "--", "touch "+outside); r.code != 0 {
		t.Errorf("danger-full-access: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--sandbox", "sideways", "--", "true"); r.code != 2 ||
		!strings.Contains(r.stderr, "--sandbox sideways: not a sandbox mode") {
		t.Errorf("a bad mode: exit %d\n%s", r.code, r.stderr)
	}
	settings := settingsFile(t, "sandbox:\n  defaultMode: read-only\n")
	if r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--settings", settings, "--workdir", ws, "--", "touch g"); r.code != 1 {
		t.Errorf("the settings' read-only default did not apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	bad := settingsFile(t, "sandbox:\n  defaultMode: read-only\n  netwrok: true\n")
	if r := dsh(t, tag, "run", "--executor", "bash-sandbox", "--settings", bad, "--", "true"); r.code != 125 ||
		!strings.Contains(r.stderr, bad+":3: sandbox.netwrok: unknown setting") {
		t.Errorf("a misspelt sandbox key: exit %d\n%s", r.code, r.stderr)
	}
}

// An unprivileged user gets the same sandbox: its spawner makes its
// read-only mounts in a user namespace of its own, mapping the user to
// itself.
func TestRunSandboxedUnprivileged(t *testing.T) {
	setpriv, err := exec.LookPath("setpriv")
	if os.Getuid() != 0 || err != nil {
		skipOrFail(t, "needs root, to become nobody with setpriv")
	}
	tag := scenario(t)
	dir, bin, ws := nobodysWorkspace(t)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
		bin, "run", "--executor", "bash-sandbox", "--workdir", ws, "--json", "--",
		"id -u; touch inside; touch "+filepath.Join(dir, "outside"))
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output()
	var res struct {
		Stdout  pluginapi.CollectedOutput `json:"stdout"`
		Sandbox *pluginapi.SandboxFacts   `json:"sandbox"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if res.Stdout.Text != "65534\n" || res.Sandbox == nil || res.Sandbox.RunnerFailure != "" || !res.Sandbox.LikelyDenial {
		t.Errorf("as nobody: %s", out)
	}
	if _, err := os.Stat(filepath.Join(ws, "inside")); err != nil {
		t.Error("the write inside the workspace did not happen")
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		t.Error("the write outside the workspace happened")
	}
}

// nobodysWorkspace makes a directory nobody can reach, holding a copy of
// dsh-host (bin) and a workspace of nobody's (ws).
func nobodysWorkspace(t *testing.T) (dir, bin, ws string) {
	t.Helper()
	dir = t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin = filepath.Join(dir, "dsh-host")
	data, err := os.ReadFile(bins.host)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ws = filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	return dir, bin, ws
}
