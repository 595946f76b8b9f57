package pluginapi

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// crypto/tls reads its socket a record or two at a time (16 KiB of data
// each), one read(2) each: a megabyte of a busy background process's
// output took the host some 32 reads, and the plugin, whose gathered
// write of that megabyte the socket's default buffer (208 KiB) took in
// five parts, waited for the host to make room before each. With
// readAheadTLS, and the plugin's send buffer grown (growSendBuffer), a
// megabyte crosses in one write and a read or two. Through a container,
// in eight interleaved windows each, the CPU the host, the plugin and
// the agent spent per MiB, against the CPU of the process writing it,
// fell from a median of 1.05 to 0.99.

// PluginDialOptions are the options a host dials an executor plugin's
// connection with (go-plugin's ClientConfig.GRPCDialOptions), given the
// TLS configuration it gives go-plugin (ClientConfig.TLSConfig), whose
// credentials they replace with the same TLS reading ahead: the buffers
// and windows of the plugin's server (Serve), and readAheadTLS.
func PluginDialOptions(client *tls.Config) []grpc.DialOption {
	return append(dialWireOptions(), grpc.WithTransportCredentials(readAheadTLS{credentials.NewTLS(client)}))
}

// readAheadTLS is a host's TLS transport credentials (the client side of
// a plugin's connection), whose connections read the socket ahead.
type readAheadTLS struct {
	credentials.TransportCredentials
}

// ClientHandshake runs the TLS handshake on raw, read ahead, as the
// wrapped credentials do.
func (r readAheadTLS) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return r.TransportCredentials.ClientHandshake(ctx, authority, &readAheadConn{Conn: raw, ahead: bufio.NewReaderSize(raw, wireBuffer)})
}

// Clone clones the wrapped credentials, reading ahead too.
func (r readAheadTLS) Clone() credentials.TransportCredentials {
	return readAheadTLS{r.TransportCredentials.Clone()}
}

// readAheadConn is a socket read through a buffer of wireBuffer: one read
// of the socket takes all it holds, up to that.
type readAheadConn struct {
	net.Conn
	ahead *bufio.Reader
}

func (c *readAheadConn) Read(p []byte) (int, error) { return c.ahead.Read(p) }

// SyscallConn is the socket's, for gRPC's view of it (channelz's socket
// options), as it is without the read-ahead.
func (c *readAheadConn) SyscallConn() (syscall.RawConn, error) {
	s, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return s.SyscallConn()
}
