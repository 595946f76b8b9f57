// Package remoteexec is the executor whose commands run elsewhere: in a
// container, on another machine. It drives a dsh-agent (bash-local, served
// over one byte stream) that a Target starts there, and forwards every
// call of the contract to it; the container, SSH and Kubernetes executors
// are Targets of this one package. The agent kills what it started when its
// stream closes; Close also removes what the Target made (a session's
// Cleanup, then a TargetCloser's Close).
package remoteexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/dsh-host/dsh-host/internal/liveoutput"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// Target starts the agent where the commands run.
type Target interface {
	// Open starts the agent there, as the target's part of the settings
	// says (see Config.Split), and returns its stream and what removes
	// what Open made. agent is the agent's part, which the agent's
	// executor gets once the session is open (Open may read it: for
	// instance to scrub on this side what the agent would).
	Open(ctx context.Context, target, agent []byte) (*Session, error)
}

// TargetCloser is a Target that keeps what it made across sessions (a pod
// the next session reconnects to, after a dropped stream): its sessions'
// Cleanup only ends their stream, and Close removes what it kept, once the
// last session is closed. Executor.Close calls it, and so does a Configure
// that changes the target's part of the settings (what was kept was made
// for the settings before; the target is opened again after that one). A
// session's end never removes it.
type TargetCloser interface {
	Target
	Close(ctx context.Context) error
}

// Session is one agent's stream and what goes with it.
type Session struct {
	Stream io.ReadWriteCloser
	// Cleanup removes what Open made (a container), once the agent's
	// stream is closed; nil when there is nothing to remove. A
	// TargetCloser's only ends what carried the stream.
	Cleanup func(ctx context.Context) error
	// Where says where the commands run, for errors ("container 3f2a…").
	Where string
	// Lost, when set, says why the session ended when the target knows
	// better than its stream (the pod was deleted); nil when it does not.
	// A run the session's end interrupted says it.
	Lost func() error
}

// Config makes an Executor.
type Config struct {
	Description pluginapi.Description
	Target      Target
	// Split parts a settings section into the target's (what Open gets)
	// and the agent's (what its executor is configured with), refusing
	// what neither takes with pluginapi.ErrInvalidSettings.
	Split func(settings []byte) (target, agent []byte, err error)
	// Reopen says a session that ended by itself (its container died) is
	// replaced at the next call. Without it (a connection to another
	// machine, whose commands died with it) the next calls fail, saying
	// so, until Configure asks for a new session: reconnecting is
	// explicit.
	Reopen bool
}

// Executor is a ShellExecutor whose commands run where its Target starts
// the agent. It opens the agent at the first call that needs it, with the
// settings in force then, and again after a session ended (the container
// died, the connection dropped): the call in flight then fails with
// pluginapi.ErrPluginUnavailable, saying where.
type Executor struct {
	cfg Config

	mu     sync.Mutex
	target []byte // the target's part of the settings in force
	agent  []byte // the agent's part
	sess   *session
	closed bool
	// ended is why the last session ended by itself, while it is not
	// reopened (Config.Reopen unset) and no Configure came since.
	ended error
	// cleanups are sessions that ended by themselves, being closed:
	// Close waits for them.
	cleanups sync.WaitGroup
	// ahead reads the next chunk of a spill read in order.
	ahead readAheads
}

type session struct {
	*Session
	client *pluginapi.StreamClient
}

var (
	_ pluginapi.ShellExecutor = (*Executor)(nil)
	_ pluginapi.LiveRunner    = (*Executor)(nil)
	_ pluginapi.RequestRunner = (*Executor)(nil)
	_ pluginapi.Configurable  = (*Executor)(nil)
	_ pluginapi.SpillReader   = (*Executor)(nil)
)

// New returns an Executor over cfg.Target.
func New(cfg Config) *Executor { return &Executor{cfg: cfg} }

// Describe answers from memory: it is the host's liveness check, and must
// not wait for a target.
func (e *Executor) Describe(ctx context.Context) (pluginapi.Description, error) {
	return e.cfg.Description, nil
}

// Configure takes the executor's settings section. A session already open
// gets the agent's part at once; when the target's part changed, the
// session ends (what it ran with it), and the next call opens one as the
// new settings say.
func (e *Executor) Configure(ctx context.Context, settings []byte) error {
	target, agent, err := e.cfg.Split(settings)
	if err != nil {
		return err
	}
	e.mu.Lock()
	same := string(target) == string(e.target)
	if tc, ok := e.cfg.Target.(TargetCloser); ok && !same && !e.closed {
		defer e.mu.Unlock()
		return e.retarget(ctx, tc, target, agent)
	}
	e.target, e.agent = target, agent
	s := e.sess
	e.ended = nil // the explicit way to reconnect
	e.mu.Unlock()
	if s == nil {
		return nil
	}
	select {
	case <-s.client.Done():
		// It ended (the connection dropped) before a call noticed: the
		// next call opens a new one, as configuring again asks.
		_ = e.closeSession(ctx, s)
		return nil
	default:
	}
	if !same {
		return e.closeSession(ctx, s)
	}
	return where(s, s.client.Configure(ctx, agentSettings(agent)))
}

// retarget takes a new target's part of the settings for a target that
// keeps what it made: the session ends, and what the target kept (made
// for the settings before) is removed, with e.mu held, so that no call
// opens a session under the new settings first.
func (e *Executor) retarget(ctx context.Context, tc TargetCloser, target, agent []byte) error {
	e.target, e.agent = target, agent
	e.ended = nil
	var errs []error
	if s := e.sess; s != nil {
		e.sess = nil
		errs = append(errs, endSession(ctx, s))
	}
	e.cleanups.Wait()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
	defer cancel()
	return errors.Join(append(errs, tc.Close(ctx))...)
}

// agentSettings are the agent's part as its executor takes them: {} for
// none, so that a reconfigure resets what an earlier one set.
func agentSettings(agent []byte) []byte {
	if len(agent) == 0 {
		return []byte("{}")
	}
	return agent
}

// session is the open session, opened (again) when there is none.
func (e *Executor) session(ctx context.Context) (*session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, pluginapi.ErrExecutorClosed
	}
	if s := e.sess; s != nil {
		select {
		case <-s.client.Done():
			e.sess = nil // it ended: closed aside, in nobody's way
			e.cleanups.Add(1)
			go func() {
				defer e.cleanups.Done()
				_ = endSession(context.Background(), s)
			}()
			if !e.cfg.Reopen {
				e.ended = fmt.Errorf("%w: the session with %s ended (the connection dropped, and what ran there was killed); "+
					"it is not reopened by itself: configure the executor again, or reload it, to reconnect", pluginapi.ErrPluginUnavailable, s.Where)
			}
		default:
			return s, nil
		}
	}
	if e.ended != nil {
		return nil, e.ended
	}
	opened, err := e.cfg.Target.Open(ctx, e.target, e.agent)
	if err != nil {
		return nil, err
	}
	client, err := pluginapi.DialStream(opened.Stream)
	if err != nil {
		opened.Stream.Close()
		cleanup(opened)
		return nil, err
	}
	s := &session{Session: opened, client: client}
	if len(e.agent) > 0 {
		if err := client.Configure(ctx, e.agent); err != nil {
			_ = endSession(context.WithoutCancel(ctx), s) // never e.sess: e.mu stays held
			return nil, fmt.Errorf("%s: the agent: %w", opened.Where, err)
		}
	}
	e.sess = s
	return s, nil
}

// closeTimeout bounds the removal of what a session made.
const closeTimeout = 30 * time.Second

// closeSession ends s: the agent closes its executor (killing what it
// runs), its stream closes, and what the target made is removed.
func (e *Executor) closeSession(ctx context.Context, s *session) error {
	e.mu.Lock()
	if e.sess == s {
		e.sess = nil
	}
	e.mu.Unlock()
	return endSession(ctx, s)
}

// endSession ends s, which is no longer the executor's session (or never
// was).
func endSession(ctx context.Context, s *session) error {
	var errs []error
	select {
	case <-s.client.Done():
	default:
		if err := s.client.Close(ctx); err != nil && !errors.Is(err, pluginapi.ErrPluginUnavailable) {
			errs = append(errs, err)
		}
	}
	_ = s.client.CloseStream()
	errs = append(errs, cleanup(s.Session))
	return errors.Join(errs...)
}

func cleanup(s *Session) error {
	if s.Cleanup == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return s.Cleanup(ctx)
}

// where names a session's target in an error from its agent.
func where(s *session, err error) error {
	if err == nil || s.Where == "" || !errors.Is(err, pluginapi.ErrPluginUnavailable) {
		return err
	}
	if s.Lost != nil {
		if lost := s.Lost(); lost != nil {
			return fmt.Errorf("%w (commands ran in %s: %v)", err, s.Where, lost)
		}
	}
	return fmt.Errorf("%w (commands ran in %s)", err, s.Where)
}

func (e *Executor) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	s, err := e.session(ctx)
	if err != nil {
		return pluginapi.ExecSpec{}, err
	}
	spec, err := s.client.Resolve(ctx, req)
	return spec, where(s, err)
}

func (e *Executor) Run(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.RunResult, error) {
	return e.RunLive(ctx, spec, nil)
}

func (e *Executor) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	s, err := e.session(ctx)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	began, p := time.Now(), liveoutput.New(spec.StdoutMaxBytes, spec.StderrMaxBytes)
	var res pluginapi.RunResult
	if onOutput == nil {
		res, err = s.client.Run(ctx, spec)
	} else {
		res, err = s.client.RunLive(ctx, spec, p.Watch(onOutput))
	}
	if err != nil {
		return settleLost(ctx, s, err, began, spec.TimeoutMs, p)
	}
	return res, nil
}

func (e *Executor) RunRequest(ctx context.Context, req pluginapi.ExecRequest, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	s, err := e.session(ctx)
	if err != nil {
		return pluginapi.RunResult{}, err
	}
	began, p := time.Now(), liveoutput.New(req.StdoutMaxBytes, req.StderrMaxBytes)
	res, err := s.client.RunRequest(ctx, req, p.Watch(onOutput))
	if err != nil {
		return settleLost(ctx, s, err, began, req.TimeoutMs, p)
	}
	return res, nil
}

func (e *Executor) Start(ctx context.Context, spec pluginapi.ExecSpec) (pluginapi.ShellProcess, error) {
	s, err := e.session(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.client.Start(ctx, spec)
	return p, where(s, err)
}

// ReadSpill reads a spill where the agent runs. A full chunk of a file that
// goes on is followed by a read of the next one, ahead, which the next call
// takes when it asks for it.
func (e *Executor) ReadSpill(ctx context.Context, path string, offset int64, max int) (pluginapi.SpillChunk, error) {
	s, err := e.session(ctx)
	if err != nil {
		return pluginapi.SpillChunk{}, err
	}
	read := func(ctx context.Context, at int64) (pluginapi.SpillChunk, error) {
		return s.client.ReadSpill(ctx, path, at, max)
	}
	c, ok := pluginapi.SpillChunk{}, false
	if a := e.ahead.take(path, offset, max); a != nil {
		c, ok = a.wait(ctx)
	}
	if !ok {
		if c, err = read(ctx, offset); err != nil {
			return c, where(s, err)
		}
	}
	e.ahead.start(path, offset, max, c, read)
	return c, nil
}

// Close ends the session: the agent kills and awaits what it runs, and
// what the target made is removed (a TargetCloser's Close, once every
// session is closed). Later calls fail with pluginapi.ErrExecutorClosed.
func (e *Executor) Close(ctx context.Context) error {
	e.mu.Lock()
	already := e.closed
	e.closed = true
	s := e.sess
	e.mu.Unlock()
	e.ahead.stop()
	var errs []error
	if s != nil {
		errs = append(errs, e.closeSession(ctx, s))
	}
	e.cleanups.Wait()
	if tc, ok := e.cfg.Target.(TargetCloser); ok && !already {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		errs = append(errs, tc.Close(ctx))
	}
	return errors.Join(errs...)
}

// SplitSettings is a Config.Split for a target whose keys are own: it
// takes them out of a settings section, as the target's part (nil when
// none is set), and leaves the rest to the agent, refusing a key that is
// neither the target's nor one of the common keys of a local executor
// (localexec.SettingsSchemaProperties) but spillDir: an agent's spill
// files are where it runs, in a directory of its own.
func SplitSettings(raw []byte, own ...string) (target, agent []byte, err error) {
	mine, rest, err := localexec.SplitSettings(raw, own...)
	if err != nil {
		return nil, nil, err
	}
	var common, left map[string]json.RawMessage
	if err := json.Unmarshal([]byte(localexec.SettingsSchemaProperties), &common); err != nil {
		return nil, nil, err
	}
	delete(common, pluginapi.SpillDirSetting)
	if err := json.Unmarshal(rest, &left); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", pluginapi.ErrInvalidSettings, err)
	}
	for _, k := range slices.Sorted(maps.Keys(left)) {
		if _, ok := common[k]; !ok {
			if k == pluginapi.SpillDirSetting {
				return nil, nil, fmt.Errorf("%w: %s: the spill files are where the commands run, in the agent's own directory", pluginapi.ErrInvalidSettings, pluginapi.SpillDirSetting)
			}
			return nil, nil, fmt.Errorf("%w: unknown key %q", pluginapi.ErrInvalidSettings, k)
		}
	}
	if len(mine) > 0 {
		if target, err = json.Marshal(mine); err != nil {
			return nil, nil, err
		}
	}
	if len(left) > 0 {
		agent = rest
	}
	return target, agent, nil
}
