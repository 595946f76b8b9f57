package pluginapi

import (
	"net"

	"google.golang.org/grpc"
)

// wireBuffer is the size of the read and write buffers of each gRPC
// connection that carries the contract: a plugin's (host and plugin) and
// a stream's (an executor plugin and its agent). A busy background
// process's output crosses them in reads of up to a megabyte; with
// gRPC's 32 KiB buffers each megabyte took some 32 writes at each hop,
// and as many wakeups of the side reading it, and the wakeups, not the
// copying, were most of what relaying it cost. Through a container, the
// plugin's and agent's context switches per MiB fell by a third to a
// half, and the host's CPU per MiB by a fifth; 1 MiB did better than 256
// KiB on the host's side. Each connection keeps its own write buffer, not
// one from gRPC's shared pool, which the collector empties (and the race
// detector drops from) while megabytes go by; the read buffer is the
// connection's own anyway. So each end of a connection holds 2 MiB (the
// host's end of a plugin's a third, read ahead under TLS: readAheadTLS),
// and may hold up to streamWindow of what its reader has not taken yet.
const wireBuffer = 1 << 20

// streamWindow is the HTTP/2 flow-control window of the same
// connections, fixed (gRPC then estimates none): a read of a megabyte of
// output must not wait for window updates every 64 KiB, neither through
// an engine's attach or an SSH channel, whose round trip is longer than a
// local socket's, nor while gRPC's estimate is still growing the window
// of a new connection (through a container, a host's first busy
// background process read about a tenth faster with it, in five
// interleaved pairs: median 95 -> 107 MiB/s).
const streamWindow = 4 << 20

// serverWireOptions are the buffer and window options of a gRPC server of
// the contract.
func serverWireOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		// SharedWriteBuffer is deprecated in grpc 1.85 (sharing is the
		// default): should it go, each write buffer comes from the pool.
		grpc.ReadBufferSize(wireBuffer), grpc.WriteBufferSize(wireBuffer), grpc.SharedWriteBuffer(false),
		grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(streamWindow),
	}
}

// dialWireOptions are the buffer and window options of a gRPC client of
// the contract: a stream's (DialStream), a plugin's host's (within
// PluginDialOptions).
func dialWireOptions() []grpc.DialOption {
	return []grpc.DialOption{
		// Deprecated in grpc 1.85, as SharedWriteBuffer (serverWireOptions).
		grpc.WithReadBufferSize(wireBuffer), grpc.WithWriteBufferSize(wireBuffer), grpc.WithSharedWriteBuffer(false),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(streamWindow),
	}
}

// growSendBuffer lets a Unix socket of the contract (a plugin's; an
// agent's side stream) hold a whole write of its gRPC connection
// (wireBuffer): a megabyte written to a socket of Linux's default (208
// KiB) was taken in five parts, each after the reader had made room, and
// each a wakeup of the writer. Linux grants twice what is asked, for its
// bookkeeping, up to twice net.core.wmem_max: with that setting's default
// (208 KiB), 416 KiB, and a megabyte in two or three parts. Other streams
// (a TCP connection, whose buffer the kernel tunes itself; an SSH channel;
// pipes) keep theirs.
func growSendBuffer(c any) {
	if s, ok := c.(*net.UnixConn); ok {
		_ = s.SetWriteBuffer(sendBufferBytes)
	}
}

// sendBufferBytes is the send buffer growSendBuffer asks for: Linux
// doubles it to 1.25 MiB, a write of wireBuffer and TLS's records.
const sendBufferBytes = wireBuffer/2 + wireBuffer/8
