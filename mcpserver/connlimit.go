package mcpserver

import (
	"net"
	"sync"
)

// connectionLimit is the bound of open connections: limit, but never more
// than half the process's file descriptor limit, so that connections
// alone cannot exhaust it (the plugins, spill files and the listener
// itself need the rest).
func connectionLimit(limit int) int {
	if n := descriptorLimit(); n > 0 {
		return max(1, min(limit, n/2))
	}
	return limit
}

// perAddress is a listener that closes, at once, a connection from a
// remote IP address that already holds max open ones. An address past its
// bound takes no slot of the total bound that wraps it, and makes no
// other address wait.
type perAddress struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

// limitPerAddress bounds the open connections of each remote IP address of
// l's at max.
func limitPerAddress(l net.Listener, max int) net.Listener {
	return &perAddress{Listener: l, max: max, open: map[string]int{}}
}

func (l *perAddress) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		l.mu.Lock()
		full := l.open[ip] >= l.max
		if !full {
			l.open[ip]++
		}
		l.mu.Unlock()
		if full {
			_ = c.Close()
			continue
		}
		return &addressConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *perAddress) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// remoteIP is c's remote IP address, without the port.
func remoteIP(c net.Conn) string {
	addr := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// addressConn gives its address's slot back once, at its first Close.
type addressConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *addressConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
