package pluginapi

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The contract over one byte stream: an exec's attached stdio, an SSH
// session, a socketpair. The same gRPC service as a plugin's, without
// go-plugin's process, handshake or socket: the stream is the
// connection, and its authentication is the stream's own (the engine's,
// or SSH's). The executor that serves it is an agent where the commands
// run; the side that dials it is an executor plugin (a container's, an
// SSH one) or a test.

// ErrStreamClosed is why an executor served over a stream stopped: the
// stream ended (its other side is gone).
var ErrStreamClosed = errors.New("the executor's stream closed")

// streamCloseTimeout bounds the Close an agent runs on its executor once
// its stream is gone.
const streamCloseTimeout = 30 * time.Second

// ServeStream serves impl over one byte stream until the stream ends or
// ctx is done; then it closes impl (terminating everything it still runs:
// whoever started it is gone) and returns why it stopped, ErrStreamClosed
// when the stream ended. It closes the stream.
func ServeStream(ctx context.Context, impl ShellExecutor, stream io.ReadWriteCloser) error {
	why, stopServing := serveStream(ctx, impl, stream)
	closeCtx, cancel := context.WithTimeout(context.Background(), streamCloseTimeout)
	defer cancel()
	cerr := impl.Close(closeCtx)
	// The host is gone, or is being left: what is still in flight goes
	// with the stream.
	stopServing()
	if cerr != nil {
		return errors.Join(why, cerr)
	}
	return why
}

// ServeSideStream serves impl over a second stream, beside the one
// ServeStream serves, until it ends or ctx is done, and returns why it
// stopped (ErrStreamClosed when the stream ended). It does not close
// impl: the stream ServeStream serves is the lifeline, whose end ends
// the agent; a side stream only carries calls. It closes the stream. A
// process started over one stream is known to that stream's calls alone.
func ServeSideStream(ctx context.Context, impl ShellExecutor, stream io.ReadWriteCloser) error {
	why, stopServing := serveStream(ctx, impl, stream)
	stopServing()
	return why
}

// serveStream serves impl over stream until the stream ends, ctx is done
// or serving fails, and returns why, and what stops the serving and
// closes the stream.
func serveStream(ctx context.Context, impl ShellExecutor, stream io.ReadWriteCloser) (why error, stop func()) {
	conn := newStreamConn(stream)
	life, endLife := context.WithCancel(context.Background())
	srv := grpc.NewServer(grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(streamWindow))
	pb.RegisterShellExecutorServer(srv, newGRPCServer(life, impl))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(&oneConnListener{conn: conn, closed: make(chan struct{})}) }()
	why = ErrStreamClosed
	select {
	case <-conn.gone:
	case <-ctx.Done():
		why = ctx.Err()
	case err := <-served:
		if err != nil {
			why = err
		}
	}
	endLife()
	return why, func() {
		// The stream first: gRPC's Stop waits for a connection still in
		// its handshake (the other side has not spoken), whose read of
		// the stream no deadline ends (a stream has none) but the
		// stream's end.
		conn.Close()
		srv.Stop()
	}
}

// StreamClient is an executor served at the other end of a stream: a
// ShellExecutor, a LiveRunner, a RequestRunner and a Configurable, as a
// plugin's client is.
type StreamClient struct {
	*grpcClient
	conn *grpc.ClientConn
	sc   *streamConn
}

var (
	_ LiveRunner    = (*StreamClient)(nil)
	_ RequestRunner = (*StreamClient)(nil)
	_ Configurable  = (*StreamClient)(nil)
)

// DialStream speaks to the executor served at the other end of stream
// (ServeStream). The stream carries one connection: once it ends, every
// call fails with ErrPluginUnavailable, and Done is closed; a new stream
// needs a new client. Close closes the stream (the agent then closes its
// executor), not the executor: call the executor's Close first to wait
// for its processes to end.
func DialStream(stream io.ReadWriteCloser) (*StreamClient, error) {
	sc := newStreamConn(stream)
	var once sync.Once
	dial := func(ctx context.Context, _ string) (net.Conn, error) {
		var c net.Conn
		once.Do(func() { c = sc })
		if c == nil {
			return nil, ErrStreamClosed // one stream, one connection
		}
		return c, nil
	}
	conn, err := grpc.NewClient("passthrough:///executor-stream",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(streamWindow),
		grpc.WithContextDialer(dial),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxStreamMessage)),
	)
	if err != nil {
		sc.Close()
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	go func() {
		<-sc.gone
		cancel()
	}()
	conn.Connect()
	return &StreamClient{grpcClient: &grpcClient{client: pb.NewShellExecutorClient(conn), life: life}, conn: conn, sc: sc}, nil
}

// streamWindow is a stream's fixed HTTP/2 window: with none set, gRPC
// estimates one by pinging at each data frame, and each ping is a round trip
// through the engine or the SSH channel that carries the stream.
const streamWindow = 4 << 20

// maxStreamMessage is the largest message a stream client takes: what a
// plugin's gRPC server takes (go-plugin's default), since the same
// responses cross both.
const maxStreamMessage = 4 << 20

// Done is closed once the stream has ended.
func (c *StreamClient) Done() <-chan struct{} { return c.sc.gone }

// CloseStream closes the stream.
func (c *StreamClient) CloseStream() error {
	err := c.conn.Close()
	c.sc.Close()
	return err
}

// streamConn is a byte stream as the net.Conn gRPC's transport wants. It
// has no deadlines (gRPC's transport sets none on a connection it did not
// dial with a timeout); gone is closed once a read or write fails, or it
// is closed.
type streamConn struct {
	rwc      io.ReadWriteCloser
	gone     chan struct{}
	goneOnce sync.Once
	// The stream is closed once, however many close it (gRPC's
	// transport, and its owner): not every stream's Close may be called
	// twice, or at once (an SSH session's stdin may not).
	closeOnce sync.Once
	closeErr  error
}

func newStreamConn(rwc io.ReadWriteCloser) *streamConn {
	return &streamConn{rwc: rwc, gone: make(chan struct{})}
}

func (c *streamConn) ended() { c.goneOnce.Do(func() { close(c.gone) }) }

func (c *streamConn) Read(p []byte) (int, error) {
	n, err := c.rwc.Read(p)
	if err != nil {
		c.ended()
	}
	return n, err
}

func (c *streamConn) Write(p []byte) (int, error) {
	n, err := c.rwc.Write(p)
	if err != nil {
		c.ended()
	}
	return n, err
}

func (c *streamConn) Close() error {
	c.ended()
	c.closeOnce.Do(func() { c.closeErr = c.rwc.Close() })
	return c.closeErr
}

func (c *streamConn) LocalAddr() net.Addr                { return streamAddr{} }
func (c *streamConn) RemoteAddr() net.Addr               { return streamAddr{} }
func (c *streamConn) SetDeadline(t time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return nil }

type streamAddr struct{}

func (streamAddr) Network() string { return "stream" }
func (streamAddr) String() string  { return "stream" }

// oneConnListener hands gRPC's server its one connection, then waits
// until it is closed.
type oneConnListener struct {
	mu     sync.Mutex
	conn   net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return streamAddr{} }

// Pipes joins a reader and a writer (a process's stdout and stdin, or
// one's own stdin and stdout) into the stream ServeStream and DialStream
// take; Close closes both.
func Pipes(r io.ReadCloser, w io.WriteCloser) io.ReadWriteCloser {
	return pipes{r, w}
}

type pipes struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }

func (p pipes) Close() error { return errors.Join(p.w.Close(), p.ReadCloser.Close()) }
