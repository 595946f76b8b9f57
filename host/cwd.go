package host

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// A session's working directory persists across its bash calls, as a
// terminal's does: a cd in one call holds for the next. The host cannot
// look at the executor's filesystem (a container, another machine), so the
// shell itself does the work, in every executor alike: the command runs
// under a small bash wrapper that enters the session's directory, evals
// the command, and on exit (an EXIT trap, so exit and set -e are covered)
// prints where it ended on a copy of stdout taken before the command ran
// (fd 9, which the command does not inherit: a command that redirects its
// stdout does not lose the report). The report is one line tagged with a
// random nonce made for this call, so no output, not even a replay of an
// earlier call's, can pass for it; the host strips it from the output.
// The wrapper exits with the command's status, and re-raises the signal
// when that status says the command's last process died from one.

// sessionDirs are the sessions' working directories, by owner.
type sessionDirs struct {
	mu sync.Mutex
	m  map[string]*sessionDir
}

// sessionDir is one session's working directory state.
type sessionDir struct {
	// base is the session's workdir as the shell reported it (symlinks
	// resolved), learned from its first command.
	base string
	// cwd is where the next command starts; empty means base.
	cwd string
	// roots are the directories beyond base that the executor reported
	// commands may use (a sandbox's writable roots).
	roots []string
}

func (s *sessionDirs) get(owner string) sessionDir {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.m[owner]; d != nil {
		return *d
	}
	return sessionDir{}
}

func (s *sessionDirs) put(owner string, d sessionDir) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*sessionDir{}
	}
	s.m[owner] = &d
}

func (s *sessionDirs) forget(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, owner)
}

// within says whether dir is root or beneath it (both clean, absolute).
func within(dir, root string) bool {
	if root == "" || dir == "" {
		return false
	}
	return dir == root || strings.HasPrefix(dir, strings.TrimSuffix(root, "/")+"/")
}

// allowed says whether dir is within the session's roots: its workdir and
// the roots the executor reported.
func (d sessionDir) allowed(dir string, workdir string) bool {
	for _, r := range append([]string{d.base, workdir}, d.roots...) {
		if within(dir, r) {
			return true
		}
	}
	return false
}

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// newNonce is a random tag for one call's report.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "__dsh_cwd_" + hex.EncodeToString(b[:])
}

// cwdWrap is command run in dir (when not empty), reporting where it ended
// under nonce when report is set (a foreground call; a background job's
// cd does not persist, so it only starts in dir).
func cwdWrap(command, dir, nonce string, report bool) string {
	var b strings.Builder
	b.WriteString("__dsh_gone=; __dsh_done=; __dsh_start=; __dsh_s=0\n")
	if report {
		b.WriteString(`__dsh_end() {
  [ -n "${__dsh_done-}" ] && return 0
  __dsh_done=1
  { builtin set +x; } 2>/dev/null
  __dsh_pwd=
  builtin cd -P . 2>/dev/null && __dsh_pwd=$PWD
  { builtin printf '\n%s %s\0%s\0%s\n' ` + nonce + ` "${__dsh_gone-}" "${__dsh_start-}" "$__dsh_pwd" >&9; } 2>/dev/null ||
    builtin printf '\n%s %s\0%s\0%s\n' ` + nonce + ` "${__dsh_gone-}" "${__dsh_start-}" "$__dsh_pwd" 2>/dev/null
}
exec 9>&1
trap '__dsh_s=$?; __dsh_end; exit $__dsh_s' EXIT
builtin cd -P . 2>/dev/null && __dsh_start=$PWD
`)
	}
	if dir != "" {
		fmt.Fprintf(&b, "builtin cd -P -- %s 2>/dev/null || __dsh_gone=1\n", shQuote(dir))
	}
	if !report {
		b.WriteString("if [ -n \"$__dsh_gone\" ]; then builtin printf '[the working directory %s is gone or cannot be entered; this job runs in %s]\\n' " + shQuote(dir) + " \"$PWD\" >&2; fi\n")
		b.WriteString("builtin unset __dsh_gone __dsh_done __dsh_start __dsh_s\n")
		b.WriteString("builtin eval " + shQuote(command) + "\n")
		return b.String()
	}
	b.WriteString("builtin eval " + shQuote(command) + " 9>&-\n")
	b.WriteString(`__dsh_s=$?
__dsh_end
trap - EXIT
if [ "$__dsh_s" -gt 128 ] && [ "$__dsh_s" -lt 160 ]; then
  ulimit -c 0 2>/dev/null
  trap - "$((__dsh_s - 128))" 2>/dev/null
  builtin kill -s "$((__dsh_s - 128))" $$ 2>/dev/null
fi
exit "$__dsh_s"
`)
	return b.String()
}

// cwdReport is what a call's wrapper reported.
type cwdReport struct {
	// gone: the session's directory could not be entered, so the command
	// started in the session's workdir.
	gone bool
	// start is the directory the executor started the shell in (the
	// session's workdir), end where the command ended; end is empty when
	// the shell could not say (its directory was removed).
	start, end string
}

// takeCWDReport finds the report tagged nonce in out, removes it, and says
// whether there was one. The last one counts: processes the command left
// behind may write after it.
func takeCWDReport(out *pluginapi.CollectedOutput, nonce string) (cwdReport, bool) {
	tag := "\n" + nonce + " "
	i := strings.LastIndex(out.Text, tag)
	if i < 0 {
		return cwdReport{}, false
	}
	rest := out.Text[i+len(tag):]
	fields := strings.SplitN(rest, "\x00", 3)
	if len(fields) != 3 {
		return cwdReport{}, false
	}
	end, after, ok := strings.Cut(fields[2], "\n")
	if !ok {
		return cwdReport{}, false
	}
	removed := len(out.Text) - i - len(after)
	out.Text = out.Text[:i] + after
	out.TotalBytes = max(out.TotalBytes-int64(removed), 0)
	return cwdReport{gone: fields[0] == "1", start: fields[1], end: end}, true
}

// resolveWorkdir is the directory a call's workdir names: relative to the
// session's workdir, cleaned, within the session's roots.
func (d sessionDir) resolveWorkdir(workdir, toolWorkdir string) (string, error) {
	base := d.base
	if base == "" {
		base = toolWorkdir
	}
	dir := workdir
	if !filepath.IsAbs(dir) {
		if base == "" {
			return "", fmt.Errorf("%w: workdir %q: relative, and the session's workdir is not known yet; give an absolute path", ErrToolInput, workdir)
		}
		dir = filepath.Join(base, dir)
	}
	dir = filepath.Clean(dir)
	if (d.base != "" || toolWorkdir != "") && !d.allowed(dir, toolWorkdir) {
		return "", fmt.Errorf("%w: workdir %s is outside the allowed roots (%s)", ErrToolInput, dir, strings.Join(d.rootList(toolWorkdir), ", "))
	}
	return dir, nil
}

// rootList names the session's roots.
func (d sessionDir) rootList(toolWorkdir string) []string {
	var out []string
	for _, r := range append([]string{d.base, toolWorkdir}, d.roots...) {
		if r != "" && !contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// withoutCWDReport is a chunk of live output without the report tagged
// nonce, so progress never shows it. The report is one small write, so it
// comes in one chunk.
func withoutCWDReport(b []byte, nonce string) []byte {
	i := bytes.Index(b, []byte("\n"+nonce+" "))
	if i < 0 {
		return b
	}
	rest := b[i+1:]
	// The report holds two NULs, then the line's end.
	n := 0
	for j, c := range rest {
		switch {
		case c == 0:
			n++
		case c == '\n' && n >= 2:
			return append(b[:i:i], rest[j+1:]...)
		}
	}
	return b[:i]
}
