package localexec

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// requireNothingTagged fails the test unless no live process carries one
// of e's tags: everything e's commands started is gone. It reads /proc,
// and fails where it cannot.
func requireNothingTagged(t *testing.T, e *Executor) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("cannot look for what the commands left running: %v", err)
	}
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if tag, state := tagOf(pid); state == tagPresent && strings.HasPrefix(tag, e.reaper.prefix) && !isZombie(pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
			t.Errorf("process %d (tag %s) outlived its command; killed", pid, tag)
		}
	}
}

// Spill files are made new (O_EXCL): a symlink planted at a spill file's
// name in a shared spillDir is not followed. Its target, there or not,
// stays as it was; the stream spills under another name, or not at all.
func TestSpillDoesNotFollowAPlantedSymlink(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	e, _ := spillExecutor(t, `{"spillDir": "`+dir+`"}`)
	ctx := context.Background()

	// A symlink at each name a spill of the next command will take: to a
	// file that exists, or to none (which O_CREAT alone would make).
	prefix := filepath.Join(dir, "dsh-"+strconv.Itoa(os.Getpid())+"-")
	type plant struct{ link, target, content string }
	var plants []plant
	plantFor := func(name string) {
		t.Helper()
		for _, stream := range []string{".stdout", ".stderr"} {
			i := len(plants)
			p := plant{link: prefix + name + stream, target: filepath.Join(outside, "target-"+strconv.Itoa(i))}
			if i%2 == 0 {
				p.content = "not the executor's " + strconv.Itoa(i) + "\n"
				if err := os.WriteFile(p.target, []byte(p.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(p.target, p.link); err != nil {
				t.Fatal(err)
			}
			plants = append(plants, p)
		}
	}

	const cmd = "seq 1 1000; seq 1001 2000 >&2"
	var wantOut, wantErr strings.Builder
	for i := 1; i <= 2000; i++ {
		w := &wantOut
		if i > 1000 {
			w = &wantErr
		}
		w.WriteString(strconv.Itoa(i) + "\n")
	}
	plantFor("run-" + strconv.FormatInt(runSeq.Load()+1, 10))
	res := runCmd(t, e, pluginapi.ExecRequest{Command: cmd, StdoutMaxBytes: 100, StderrMaxBytes: 100})
	e.mu.Lock()
	next := e.next + 1 // Start's id: "p" and e.next, counted first
	e.mu.Unlock()
	plantFor("bg-p" + strconv.Itoa(next))
	p := startCmd(t, e, pluginapi.ExecRequest{Command: cmd})
	if _, err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := p.ReadOutput(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireNothingTagged(t, e)

	// In plants' order. A spill that failed has no path: that is allowed,
	// following the link is not. One that was made is a new file under
	// another name: the planted one and a suffix (which says the names
	// planted are the ones the executor tried).
	spills := []struct{ what, path, err, want string }{
		{"the run's stdout", res.Stdout.SpillPath, res.Stdout.SpillError, wantOut.String()},
		{"the run's stderr", res.Stderr.SpillPath, res.Stderr.SpillError, wantErr.String()},
		{"the process's stdout", r.StdoutSpillPath, "", wantOut.String()},
		{"the process's stderr", r.StderrSpillPath, "", wantErr.String()},
	}
	for i, s := range spills {
		if s.path == "" {
			t.Logf("%s did not spill: %s", s.what, s.err)
			continue
		}
		if !strings.HasPrefix(s.path, plants[i].link) {
			t.Errorf("%s spilled to %s, not under the name planted for it (%s): the test planted the wrong names", s.what, s.path, plants[i].link)
		}
		fi, err := os.Lstat(s.path)
		switch {
		case err != nil:
			t.Errorf("%s spilled to %s: %v", s.what, s.path, err)
			continue
		case !fi.Mode().IsRegular():
			t.Errorf("%s spilled to %s, which is not a new regular file (%s)", s.what, s.path, fi.Mode())
			continue
		}
		if b, err := os.ReadFile(s.path); err != nil || string(b) != s.want {
			t.Errorf("%s's spill file %s holds %d bytes (%v), want the stream's %d", s.what, s.path, len(b), err, len(s.want))
		}
	}
	for _, p := range plants {
		if got, err := os.Readlink(p.link); err != nil || got != p.target {
			t.Errorf("the planted symlink %s now points to %q (%v), want it untouched", p.link, got, err)
		}
		b, err := os.ReadFile(p.target)
		switch {
		case p.content == "" && err == nil:
			t.Errorf("a spill followed the symlink %s and made its target %s (%d bytes)", p.link, p.target, len(b))
		case p.content != "" && string(b) != p.content:
			t.Errorf("a spill followed the symlink %s and wrote to its target %s: it holds %d bytes, want its own %q",
				p.link, p.target, len(b), p.content)
		}
	}
}
