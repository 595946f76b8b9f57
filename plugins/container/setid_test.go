package container_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/container"
)

// nobody is the uid and gid a test workspace is given to: not this
// machine's root (CI runs the tests as root).
const nobody = 65534

// workspaceOf makes a workspace (0755) owned by uid:gid.
func workspaceOf(t *testing.T, uid, gid int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dsh-container-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plants are the ways a command makes a set-id copy of bash in its
// workdir: a host user who ran one would get the container user's uid
// or gid.
var plants = map[string]string{
	"chmod 4755":   "cp /bin/bash suid && chmod 4755 suid",
	"chmod u+s":    "cp /bin/bash us && chmod u+s us",
	"chmod 2755":   "cp /bin/bash sgid && chmod 2755 sgid",
	"cp -p of one": "cp /bin/bash orig && chmod 4755 orig; cp -p orig copy",
}

// setIDFiles lists the files of dir with a set-uid or set-gid bit, as
// this machine sees them, with their owner.
func setIDFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			st := fi.Sys().(*syscall.Stat_t)
			found = append(found, e.Name()+" "+fi.Mode().String()+" uid "+strconv.Itoa(int(st.Uid))+" gid "+strconv.Itoa(int(st.Gid)))
		}
	}
	return found
}

// A command in workspace-write cannot leave a set-id file in its
// workspace for this machine's users: not as root (a root-owned
// workspace, the image's user root, or user: root), nor as the
// workspace's owner. Checked from this machine, on the files themselves.
func TestNoSetIDFileIsPlantedForThisMachine(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			for _, c := range []struct {
				name     string
				owner    int
				user     string
				wantUser string
			}{
				{"a root-owned workspace", 0, "", "0"},
				{"user root", nobody, "0:0", "0"},
				{"nobody's workspace", nobody, "", "65534"},
			} {
				t.Run(c.name, func(t *testing.T) {
					ws := workspaceOf(t, c.owner, c.owner)
					if c.user != "" {
						// Root without CAP_DAC_OVERRIDE writes where the mode lets
						// every user write.
						if err := os.Chmod(ws, 0o777); err != nil {
							t.Fatal(err)
						}
					}
					extra := map[string]any{"workspace": ws}
					if c.user != "" {
						extra["user"] = c.user
					}
					x := newExecutor(t, addr, extra)
					if res := run(t, x, "", "id -u"); strings.TrimSpace(res.Stdout.Text) != c.wantUser {
						t.Fatalf("id -u: %q, %+v; want %s", res.Stdout.Text, res, c.wantUser)
					}
					for what, cmd := range plants {
						res := run(t, x, "", cmd)
						t.Logf("%s: exit %d, %s", what, code(res), strings.TrimSpace(res.Stderr.Text))
					}
					if found := setIDFiles(t, ws); len(found) > 0 {
						t.Errorf("set-id files planted in the workspace, as this machine sees them: %q", found)
					}
					if res := run(t, x, "", "cp /bin/bash plain && chmod 755 plain && ./plain -c 'echo ran'"); res.Stdout.Text != "ran\n" {
						t.Errorf("an ordinary executable copy must still work: %+v", res)
					}
				})
			}
		})
	}
}

// By default commands run as the workspace's owner, as dev containers
// map the remote user: what they write is that owner's, and the agent's
// spill files and background jobs work as that user (whose home may not
// exist). user: overrides it.
func TestCommandsRunAsTheWorkspaceOwner(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws := workspaceOf(t, nobody, nobody)
			x := newExecutor(t, addr, map[string]any{"workspace": ws, "defaultOutputBytes": 1000})
			before := container.SideStreamsOpened.Load()
			res := run(t, x, "", "id -u; id -g; touch made; head -c 5000 /dev/zero | tr '\\0' x")
			if n := container.SideStreamsOpened.Load() - before; n != 1 {
				t.Errorf("an agent as 65534 opened %d side streams; want 1 (its socket is open to every user)", n)
			}
			lines := strings.SplitN(res.Stdout.Text, "\n", 3)
			if code(res) != 0 || len(lines) < 3 || lines[0] != "65534" || lines[1] != "65534" {
				t.Fatalf("a command with a workspace of uid 65534: %+v; want it to run as 65534:65534", res)
			}
			if f := res.Sandbox; f == nil || !slices.Contains(f.Enforced, "user: 65534:65534 (the workspace's owner)") ||
				!slices.Contains(f.Enforced, "no set-uid or set-gid bits: refused to every command (seccomp)") {
				t.Errorf("the facts must name the user and the refusal of set-id bits: %+v", f)
			}
			fi, err := os.Stat(filepath.Join(ws, "made"))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody || st.Gid != nobody {
				t.Errorf("a file the command made is %d:%d; want the workspace owner's, 65534:65534", st.Uid, st.Gid)
			}
			if res.Stdout.SpillPath == "" || res.Stdout.TotalBytes < 5000 {
				t.Fatalf("5000 bytes past a cap of 1000 must spill: %+v", res.Stdout)
			}
			chunk, err := x.(pluginapi.SpillReader).ReadSpill(t.Context(), res.Stdout.SpillPath, 0, 1<<20)
			if err != nil || !strings.HasSuffix(string(chunk.Data), strings.Repeat("x", 5000)) {
				t.Errorf("the spill of a command run as 65534: %d bytes, %v", len(chunk.Data), err)
			}
			spec, err := x.Resolve(t.Context(), pluginapi.ExecRequest{Command: "id -u"})
			if err != nil {
				t.Fatal(err)
			}
			job, err := x.Start(t.Context(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if exit, err := job.Wait(t.Context()); err != nil || exit.ExitCode == nil || *exit.ExitCode != 0 {
				t.Fatalf("a job as 65534: %+v, %v", exit, err)
			}
			if r, err := job.ReadOutput(t.Context()); err != nil || r.Delta != "65534\n" {
				t.Errorf("a job's output as 65534: %q, %v", r.Delta, err)
			}
		})
	}
}

// user: overrides the workspace's owner.
func TestUserOverridesTheWorkspaceOwner(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			x := newExecutor(t, engine(t, name), map[string]any{"workspace": workspaceOf(t, nobody, nobody), "user": "1234:4321"})
			if res := run(t, x, "", "id -u; id -g"); res.Stdout.Text != "1234\n4321\n" {
				t.Errorf("user: 1234:4321 must override the workspace's owner: %+v", res)
			}
		})
	}
}

// No system call leaves a set-id file for this machine: the probe, run
// as root inside the container in a root-owned workspace, tries each
// (open, openat, O_TMPFILE, creat, chmod, fchmod, fchmodat, fchmodat2,
// mknod, mknodat, openat2, io_uring); an ordinary file is still made.
func TestNoSystemCallMakesASetIDFile(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			ws := workspaceOf(t, 0, 0)
			buildStatic(t, "setidprobe", filepath.Join(ws, "setidprobe"))
			x := newExecutor(t, engine(t, name), map[string]any{"workspace": ws})
			res := run(t, x, "", "./setidprobe")
			lines := strings.Split(strings.TrimSpace(res.Stdout.Text), "\n")
			if code(res) != 0 || len(lines) < 10 || lines[0] != "plain ok" {
				t.Fatalf("the probe: %+v", res)
			}
			for _, l := range lines[1:] {
				if strings.HasSuffix(l, " ok") {
					t.Errorf("inside the container, %s", l)
				}
			}
			t.Logf("the probe:\n%s", res.Stdout.Text)
			if found := setIDFiles(t, ws); len(found) > 0 {
				t.Errorf("set-id files planted in the workspace, as this machine sees them: %q", found)
			}
		})
	}
}
