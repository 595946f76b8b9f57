package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/dsh-host/dsh-host/internal/ownedtemp"
)

// The side stream: an engine's attached stdio passes every byte through
// the engine's own processes (dockerd and the shim, or conmon), each a hop
// in every call's round trip. So the agent, started with --dial, also connects to a unix socket of this
// plugin's, bind-mounted read-only into the container, and every call
// crosses that connection; the attached stream stays the lifeline (its
// end still ends the agent, and everything it runs).
//
// Who may connect, and to whom: the agent gets a random token in its
// arguments, and serves the connection only once the plugin has sent it
// (another process listening at the agent's path, say a command of
// another container that can see this machine's temporary directory,
// cannot). The socket is in a directory of this plugin's, under
// a 0700 one of the temporary directory, and read-only in the container
// (nothing there can put another socket in its place). One connection is
// taken, before any command has run, and only from the container's agent
// (the peer's credentials, from the kernel, name the container's init or
// its child); then the socket is removed, and nothing else can connect.
// Where no side stream can be made (an engine on another machine, a
// connection that never comes), calls cross the attached stream.

// sideInContainer is where the socket's directory is mounted.
const sideInContainer = "/.dsh/run"

// sideSocketName is the socket's name in that directory.
const sideSocketName = "agent"

// sideWait bounds the wait for the agent's connection, once the
// container has started. (A variable: a test that must tell a wait cut
// short from one waited out makes it long.)
var sideWait = 5 * time.Second

// sidePrefix begins the name of a side stream's temporary directory;
// internal/ownedtemp names the rest for this process, so that a sweep can
// tell a dead plugin's.
const sidePrefix = "dsh-side-"

// sideListener is the socket the agent connects to.
type sideListener struct {
	token  []byte // what the plugin sends first: the agent serves nothing else
	parent string // the private temporary directory
	dir    string // the one mounted into the container
	l      *net.UnixListener
}

// listenSide makes the socket, in a new temporary directory.
func listenSide() (*sideListener, error) {
	parent, err := ownedtemp.Make(sidePrefix)
	if err != nil {
		return nil, err
	}
	s := &sideListener{parent: parent, dir: filepath.Join(parent, "r"), token: make([]byte, 32)}
	if _, err := rand.Read(s.token); err != nil {
		os.RemoveAll(parent)
		return nil, err
	}
	if err := s.listen(); err != nil {
		os.RemoveAll(parent)
		return nil, err
	}
	return s, nil
}

func (s *sideListener) listen() error {
	// Searchable and the socket writable by every user: the container's
	// user is not this plugin's, and the parent keeps this machine's
	// other users out.
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(s.dir, sideSocketName)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		l.Close()
		return err
	}
	s.l = l
	return nil
}

// bind is the bind mount that puts the socket's directory in the
// container, read-only.
func (s *sideListener) bind() string { return bindSource(s) + ":" + sideInContainer + ":ro" }

// bindSource is the directory the engine mounts: the socket's (a test
// names one the engine cannot find, as an engine in a VM would).
var bindSource = func(s *sideListener) string { return s.dir }

// agentArgs are the agent's arguments that have it connect.
func (s *sideListener) agentArgs() []string {
	return []string{"--dial", sideInContainer + "/" + sideSocketName, "--dial-token", hex.EncodeToString(s.token)}
}

// accept takes the agent's connection: the first one, within sideWait,
// from the process initPid names (the container's init) or its child.
// noSide is closed when no connection will come: the agent's attached
// stream ended (the agent, or the container, is gone), or the agent said
// it could not connect. It closes the
// listener and removes its directories, whatever it returns.
func (s *sideListener) accept(ctx context.Context, initPid func(context.Context) (int, error), noSide <-chan struct{}) (net.Conn, error) {
	defer s.close()
	_ = s.l.SetDeadline(time.Now().Add(sideWait))
	type accepted struct {
		c   *net.UnixConn
		err error
	}
	got := make(chan accepted, 1)
	go func() {
		c, err := s.l.AcceptUnix()
		got <- accepted{c, err}
	}()
	var a accepted
	select {
	case a = <-got:
	case <-noSide:
		s.l.Close()
		a = <-got
		if a.err == nil {
			a.c.Close()
		}
		return nil, errors.New("the agent's stream ended, or the agent could not connect")
	case <-ctx.Done():
		s.l.Close()
		if a = <-got; a.err == nil {
			a.c.Close()
		}
		return nil, ctx.Err()
	}
	if a.err != nil {
		return nil, fmt.Errorf("the agent did not connect: %w", a.err)
	}
	pid, err := initPid(ctx)
	if err == nil {
		err = peerIsAgent(a.c, pid)
	}
	if err == nil {
		// The agent serves this connection once it has the token: a
		// socket some other process put at the agent's path gets none.
		_, err = a.c.Write(s.token)
	}
	if err != nil {
		a.c.Close()
		return nil, err
	}
	sideStreamsOpened.Add(1)
	return a.c, nil
}

// sideStreamsOpened counts the side streams this process opened.
var sideStreamsOpened atomic.Int64

// close closes the listener (removing its socket) and the directories.
func (s *sideListener) close() {
	s.l.Close()
	os.RemoveAll(s.parent)
}
