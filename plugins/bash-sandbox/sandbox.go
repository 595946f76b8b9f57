package bashsandbox

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/protect"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/bash-sandbox/confine"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// maxSpawners bounds the spawners kept, one per policy (mode, workdir):
// past it the least recently used is closed.
const maxSpawners = 8

// sandbox is bash-sandbox's localexec.Sandbox: a spawner per policy, and
// one private temporary directory every confined command may write.
type sandbox struct {
	// self is this process's binary, which spawners run, by descriptor.
	self *os.File
	// defaultMode is read without mu: Describe, the host's liveness
	// check, must answer even while a spawner starts under mu.
	defaultMode atomic.Value // pluginapi.SandboxMode

	mu      sync.Mutex
	policy  SandboxPolicy
	scratch string
	// scratchIn is where the scratch directory is made ("": the system's
	// temporary directory).
	scratchIn string
	spawners  map[string]*confine.Spawner
	// starting holds, per policy, a channel closed once the spawner
	// being started for it is (or failed).
	starting map[string]chan struct{}
	recent   []string // keys, least recently used first
	// retired are spawners replaced while they ran something, closed
	// once idle.
	retired []*confine.Spawner
	// granted are the roots made writable so far, symlinks resolved.
	granted []string
	closed  bool
}

func newSandbox(self *os.File, policy SandboxPolicy) (*sandbox, error) {
	s := &sandbox{self: self, spawners: map[string]*confine.Spawner{}, starting: map[string]chan struct{}{}}
	if err := s.checkPolicy(policy); err != nil {
		return nil, err
	}
	s.policy = policy
	s.defaultMode.Store(modeOf(policy))
	return s, nil
}

// modeOf is p's default mode.
func modeOf(p SandboxPolicy) pluginapi.SandboxMode {
	if p.DefaultMode == "" {
		return pluginapi.SandboxWorkspaceWrite
	}
	return p.DefaultMode
}

func (s *sandbox) checkPolicy(p SandboxPolicy) error {
	if p.DefaultMode != "" && !slices.Contains(confine.Modes, p.DefaultMode) {
		return fmt.Errorf("%w: %s: defaultMode %q is not one of %v", pluginapi.ErrInvalidSettings, Name, p.DefaultMode, confine.Modes)
	}
	for _, r := range p.WritableRoots {
		if !filepath.IsAbs(r) {
			return fmt.Errorf("%w: %s: writable root %q is not absolute", pluginapi.ErrInvalidSettings, Name, r)
		}
	}
	if _, err := protect.NewList(p.ProtectedPaths, p.UnprotectedPaths); err != nil {
		return fmt.Errorf("%w: %s: sandbox.%v", pluginapi.ErrInvalidSettings, Name, err)
	}
	return nil
}

// protectedList is the protected list of the policy in force (checked
// when the policy was taken). s.mu is held.
func (s *sandbox) protectedList() protect.List {
	l, _ := protect.NewList(s.policy.ProtectedPaths, s.policy.UnprotectedPaths)
	return l
}

// setPolicy replaces the policy, and says where to make the scratch
// directory; spawners of the old policy are closed.
func (s *sandbox) setPolicy(p SandboxPolicy, scratchIn string) error {
	s.mu.Lock()
	old := s.spawners
	s.policy, s.spawners, s.recent = p, map[string]*confine.Spawner{}, nil
	s.defaultMode.Store(modeOf(p))
	if s.scratch == "" {
		s.scratchIn = scratchIn
	}
	s.mu.Unlock()
	for _, sp := range old {
		_ = sp.Close()
	}
	return nil
}

func (s *sandbox) DefaultMode() pluginapi.SandboxMode {
	return s.defaultMode.Load().(pluginapi.SandboxMode)
}

func (s *sandbox) Modes() []pluginapi.SandboxMode { return confine.Modes }

func (s *sandbox) Uncontained() []string { return confine.Uncontained }

// Reach is where confined commands can write on this machine: the workdir
// a request names (in workspace-write), the policy's writable roots, the
// roots granted so far and the private temporary directory.
// (danger-full-access reaches further, but only by an approved escalation,
// command by command.)
func (s *sandbox) Reach() pluginapi.HostReach {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := slices.Clone(s.policy.WritableRoots)
	for _, r := range s.granted {
		if !slices.Contains(paths, r) {
			paths = append(paths, r)
		}
	}
	if s.scratch != "" {
		paths = append(paths, s.scratch)
	}
	return pluginapi.HostReach{Kind: pluginapi.ReachPaths, Paths: paths, Workdirs: true}
}

// Confine returns the spawner of spec's policy, starting it when there is
// none (or the last one died).
func (s *sandbox) Confine(spec pluginapi.ExecSpec) (localexec.Confinement, error) {
	if spec.SandboxMode == pluginapi.SandboxDangerFullAccess {
		return localexec.Confinement{Launcher: localexec.ForkLauncher{}}, nil
	}
	p, err := s.policyOf(spec)
	if err != nil {
		return localexec.Confinement{}, err
	}
	sp, err := s.spawnerFor(p)
	if err != nil {
		return localexec.Confinement{}, err
	}
	writable := []string{p.Scratch}
	var unprotected []string
	if p.Mode == pluginapi.SandboxWorkspaceWrite {
		writable = append(slices.Clone(p.WritableRoots), p.Scratch)
		s.mu.Lock()
		s.grant(p.WritableRoots)
		unprotected = s.protectedList().Unprotected
		s.mu.Unlock()
	}
	env := map[string]string{"TMPDIR": p.Scratch}
	if !p.Network {
		maps.Copy(env, localexec.OfflineEnv)
	}
	return localexec.Confinement{Launcher: &launcher{s: s, p: p, sp: sp}, Enforced: sp.Enforced, Env: env,
		WritableRoots: writable, Limits: sp.Limits, ProtectedPaths: sp.Protected, Unprotected: unprotected}, nil
}

// policyOf is the policy a command resolved to spec runs under, its roots
// as they are now.
func (s *sandbox) policyOf(spec pluginapi.ExecSpec) (confine.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return confine.Policy{}, errors.New("the sandbox is closed")
	}
	if s.scratch == "" {
		if s.scratchIn != "" {
			if err := os.MkdirAll(s.scratchIn, 0o700); err != nil {
				return confine.Policy{}, fmt.Errorf("making the sandbox's private temporary directory: %w", err)
			}
		}
		dir, err := os.MkdirTemp(s.scratchIn, "dsh-sandbox-tmp-")
		if err != nil {
			return confine.Policy{}, fmt.Errorf("making the sandbox's private temporary directory: %w", err)
		}
		s.scratch = dir
	}
	// The roots as they are now, symlinks resolved: a root that is a
	// link would otherwise make writable wherever it points. A link that a
	// confined command could have planted (beneath a root granted before,
	// or the scratch directory) is refused outright: it would make
	// writable wherever the command chose.
	var roots []string
	for _, r := range append([]string{spec.Workdir}, s.policy.WritableRoots...) {
		if link := linkBeneath(r, append(slices.Clone(s.granted), s.scratch)); link != "" {
			return confine.Policy{}, fmt.Errorf("writable root %s passes through the symlink %s, which lies where sandboxed commands can write: name the directory it points to instead", r, link)
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return confine.Policy{}, fmt.Errorf("writable root %s: %w", r, err)
		}
		if real == "/" {
			return confine.Policy{}, fmt.Errorf("writable root %s is the whole filesystem: choose a workdir beneath it", r)
		}
		roots = append(roots, real)
	}
	return confine.Policy{
		Mode:          spec.SandboxMode,
		WritableRoots: roots,
		Scratch:       s.scratch,
		Network:       s.policy.Network,
		Limits:        limits(s.policy.Limits),
	}, nil
}

// spawnerFor returns the spawner of p, starting one when there is none
// (or the last one is gone). s.mu is held only to look and to record: a
// spawner's start happens without it, and callers of the same policy wait
// for that start outside it.
func (s *sandbox) spawnerFor(p confine.Policy) (*confine.Spawner, error) {
	key := p.Key()
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("the sandbox is closed")
		}
		if wait, ok := s.starting[key]; ok {
			s.mu.Unlock()
			<-wait
			continue
		}
		sp := s.spawners[key]
		var gone *confine.Spawner
		if sp != nil {
			select {
			case <-sp.Gone():
				gone, sp = sp, nil
				delete(s.spawners, key)
			default:
				if !sp.Intact() {
					// A placeholder was removed outside, and with it the
					// mount over it: a new spawner protects it again.
					// The old one's runs go on; it is closed once idle.
					s.retire(sp)
					sp = nil
					delete(s.spawners, key)
				}
			}
		}
		if sp != nil {
			evicted := s.touch(key)
			s.mu.Unlock()
			closeSpawners(evicted)
			return sp, nil
		}
		done := make(chan struct{})
		s.starting[key] = done
		list := s.protectedList()
		s.mu.Unlock()
		if gone != nil {
			_ = gone.Close() // and lets go of its placeholders
		}
		if p.Mode == pluginapi.SandboxWorkspaceWrite {
			// Planned at the spawner's start: its mounts are made then,
			// once, for every run it makes.
			p.Protected = protect.Plan(p.WritableRoots, protect.Home(), list)
			p.NewRepositories = !list.Git()
		}
		sp, err := confine.StartSpawner(fmt.Sprintf("/proc/self/fd/%d", s.self.Fd()), p)
		s.mu.Lock()
		delete(s.starting, key)
		close(done)
		if err == nil && s.closed {
			s.mu.Unlock()
			_ = sp.Close()
			return nil, errors.New("the sandbox is closed")
		}
		var evicted []*confine.Spawner
		if err == nil {
			s.spawners[key] = sp
			evicted = s.touch(key)
		}
		s.mu.Unlock()
		closeSpawners(evicted)
		return sp, err
	}
}

// launcher starts a command through the spawner of its policy; when that
// spawner turns out gone (killed, or found stopped and killed) before the
// command started, it starts it once more through a new one.
type launcher struct {
	s  *sandbox
	p  confine.Policy
	sp *confine.Spawner
}

// StartsElsewhere: the commands are their runs' inits' children.
func (l *launcher) StartsElsewhere() {}

// MakesTerminals: a confined command's terminal is made in its run, in a
// devpts instance of the run's own (confine.Spawner).
func (l *launcher) MakesTerminals() {}

func (l *launcher) Start(launch localexec.Launch) (localexec.Started, error) {
	st, err := l.sp.Start(launch)
	if err == nil || !errors.Is(err, confine.ErrSpawnerGone) {
		return st, err
	}
	sp, serr := l.s.spawnerFor(l.p)
	if serr != nil {
		return nil, fmt.Errorf("%w; a new one did not start: %v", err, serr)
	}
	return sp.Start(launch)
}

// maxGranted bounds the roots remembered as granted.
const maxGranted = 256

// grant remembers roots as made writable to confined commands: a symlink
// beneath one is theirs to have planted. s.mu is held.
func (s *sandbox) grant(roots []string) {
	for _, r := range roots {
		if !slices.Contains(s.granted, r) {
			s.granted = append(s.granted, r)
		}
	}
	if extra := len(s.granted) - maxGranted; extra > 0 {
		s.granted = slices.Delete(s.granted, 0, extra)
	}
}

// linkBeneath returns the first symlink on path's way whose own directory
// (symlinks resolved) lies beneath one of dirs, or "".
func linkBeneath(path string, dirs []string) string {
	cur := "/"
	for _, part := range strings.Split(filepath.Clean(path), string(filepath.Separator)) {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "" // resolving it fails, later
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		for _, d := range dirs {
			if d != "" && (cur == d || strings.HasPrefix(cur, d+string(filepath.Separator))) {
				return next
			}
		}
		real, err := filepath.EvalSymlinks(next)
		if err != nil {
			return ""
		}
		cur = real
	}
	return ""
}

// touch marks key most recently used and, past the bound, drops the least
// recently used spawners that have nothing running, and returns them for
// the caller to close once it let go of s.mu; s.mu is held.
func (s *sandbox) touch(key string) (evicted []*confine.Spawner) {
	s.recent = slices.DeleteFunc(s.recent, func(k string) bool { return k == key })
	s.recent = append(s.recent, key)
	for i := 0; len(s.recent) > maxSpawners && i < len(s.recent)-1; {
		k := s.recent[i]
		if sp := s.spawners[k]; sp != nil && !sp.Idle() {
			i++
			continue
		}
		if sp := s.spawners[k]; sp != nil {
			evicted = append(evicted, sp)
		}
		delete(s.spawners, k)
		s.recent = slices.Delete(s.recent, i, i+1)
	}
	return evicted
}

// retire closes sp once nothing runs in it, or when the sandbox closes.
// s.mu is held.
func (s *sandbox) retire(sp *confine.Spawner) {
	s.retired = append(s.retired, sp)
	go func() {
		for !sp.Idle() {
			select {
			case <-sp.Gone():
			case <-time.After(100 * time.Millisecond):
				continue
			}
			break
		}
		s.mu.Lock()
		i := slices.Index(s.retired, sp)
		if i >= 0 {
			s.retired = slices.Delete(s.retired, i, i+1)
		}
		s.mu.Unlock()
		if i >= 0 {
			_ = sp.Close()
		}
	}()
}

// closeSpawners closes spawners, outside s.mu: a close waits for the
// process.
func closeSpawners(spawners []*confine.Spawner) {
	for _, sp := range spawners {
		_ = sp.Close()
	}
}

func (s *sandbox) Assess(res pluginapi.RunResult) []string {
	if res.Sandbox == nil || res.Sandbox.Mode == pluginapi.SandboxDangerFullAccess {
		return nil
	}
	s.mu.Lock()
	network := s.policy.Network
	s.mu.Unlock()
	if !network {
		return localexec.OfflineDenialEvidence(res)
	}
	return localexec.DenialEvidence(res)
}

func (s *sandbox) Close() error {
	s.mu.Lock()
	s.closed = true
	spawners := s.spawners
	s.spawners = map[string]*confine.Spawner{}
	retired := s.retired
	s.retired = nil
	scratch := s.scratch
	s.mu.Unlock()
	for _, sp := range spawners {
		_ = sp.Close()
	}
	closeSpawners(retired)
	s.self.Close()
	if scratch != "" {
		return os.RemoveAll(scratch)
	}
	return nil
}
