package mcpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/netutil"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// HTTPPath is where the MCP endpoint is served.
const HTTPPath = "/mcp"

// The defaults of HTTPOptions.
const (
	DefaultMaxSessions       = 64
	DefaultMaxJobsPerSession = 16
	DefaultMaxBodyBytes      = 1 << 20
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultJobGrace          = time.Minute
	DefaultCallsPerSession   = 4
	DefaultReadTimeout       = 30 * time.Second
	DefaultMaxConnections    = 1024
	DefaultMaxConnsPerAddr   = 256
)

// HTTPSchema is the JSON Schema of the settings file's mcp section: what
// `dsh-host mcp --http` serves under.
const HTTPSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "tokenFile": {"type": "string", "description": "a file holding the bearer token every HTTP request must carry"},
    "tokenEnv": {"type": "string", "description": "the environment variable holding the bearer token (instead of tokenFile)"},
    "maxSessions": {"type": "integer", "minimum": 1, "default": 64, "description": "sessions at once"},
    "maxJobsPerSession": {"type": "integer", "minimum": 1, "default": 16, "description": "running background jobs of one session"},
    "maxBodyBytes": {"type": "integer", "minimum": 1024, "default": 1048576, "description": "size of one request body"},
    "idleTimeoutMs": {"type": "integer", "minimum": 1, "default": 600000, "description": "a session without a request this long is closed (a client that died)"},
    "jobGraceMs": {"type": "integer", "minimum": 0, "default": 60000, "description": "how long a closed session's background jobs live on before they are killed"},
    "maxCallsPerSession": {"type": "integer", "minimum": 1, "default": 4, "description": "foreground bash calls of one session at once"},
    "readTimeoutMs": {"type": "integer", "minimum": 1, "default": 30000, "description": "how long a request's headers, and then its body, may take to arrive, and how long a connection may wait idle for its next request"},
    "maxConnections": {"type": "integer", "minimum": 1, "default": 1024, "description": "open connections at once (at most half the process's file descriptor limit)"},
    "maxConnectionsPerAddress": {"type": "integer", "minimum": 1, "default": 256, "description": "open connections of one remote IP address at once"},
    "tls": {
      "type": "object",
      "additionalProperties": false,
      "required": ["certFile", "keyFile"],
      "properties": {
        "certFile": {"type": "string", "description": "the server's certificate chain (PEM)"},
        "keyFile": {"type": "string", "description": "its private key (PEM)"}
      }
    }
  }
}`

// HTTPSettings is the mcp section.
type HTTPSettings struct {
	TokenFile         string `json:"tokenFile,omitempty"`
	TokenEnv          string `json:"tokenEnv,omitempty"`
	MaxSessions       int    `json:"maxSessions,omitempty"`
	MaxJobsPerSession int    `json:"maxJobsPerSession,omitempty"`
	MaxBodyBytes      int64  `json:"maxBodyBytes,omitempty"`
	IdleTimeoutMs     int64  `json:"idleTimeoutMs,omitempty"`
	JobGraceMs        *int64 `json:"jobGraceMs,omitempty"`

	MaxCallsPerSession       int          `json:"maxCallsPerSession,omitempty"`
	ReadTimeoutMs            int64        `json:"readTimeoutMs,omitempty"`
	MaxConnections           int          `json:"maxConnections,omitempty"`
	MaxConnectionsPerAddress int          `json:"maxConnectionsPerAddress,omitempty"`
	TLS                      *TLSSettings `json:"tls,omitempty"`
}

// TLSSettings name the files of the certificate served over TLS.
type TLSSettings struct {
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

// HTTPOptions are a streamable HTTP server's credentials and limits.
type HTTPOptions struct {
	// Token is the bearer token every request must carry, compared in
	// constant time; empty: none, which only a loopback listener may go
	// without (ServeHTTP refuses any other).
	Token string
	// MaxSessions, MaxJobsPerSession and MaxBodyBytes bound what clients
	// may hold at once; zero: the defaults.
	MaxSessions       int
	MaxJobsPerSession int
	MaxBodyBytes      int64
	// IdleTimeout closes a session without a request for that long (its
	// client died); JobGrace is how long a closed session's background
	// jobs live on before they are killed. Zero: the defaults; a negative
	// JobGrace kills them at once.
	IdleTimeout time.Duration
	JobGrace    time.Duration
	// MaxCallsPerSession bounds a session's foreground bash calls at
	// once; zero: the default.
	MaxCallsPerSession int
	// ReadTimeout bounds the arrival of a request's headers, then of its
	// body, and a connection's wait for its next request; zero: the
	// default.
	ReadTimeout time.Duration
	// MaxConnections and MaxConnectionsPerAddress bound the open
	// connections, all together (never more than half the process's file
	// descriptor limit) and of one remote IP address; zero: the defaults.
	MaxConnections           int
	MaxConnectionsPerAddress int
	// TLS, when set, is served (its certificate from the settings'
	// mcp.tls); nil: plain HTTP.
	TLS *tls.Config
}

// HTTPOptionsFrom reads the mcp section (JSON, as SettingsFile.Section
// returns it; nil: every default), with the token from the file or the
// variable it names (lookupEnv, os.LookupEnv for a real server).
func HTTPOptionsFrom(raw []byte, readFile func(string) ([]byte, error), lookupEnv func(string) (string, bool)) (HTTPOptions, error) {
	var s HTTPSettings
	if len(raw) > 0 && string(raw) != "null" {
		if err := decodeStrict(raw, &s); err != nil {
			return HTTPOptions{}, fmt.Errorf("mcp: %w", err)
		}
	}
	o := HTTPOptions{
		MaxSessions: s.MaxSessions, MaxJobsPerSession: s.MaxJobsPerSession,
		MaxBodyBytes: s.MaxBodyBytes, IdleTimeout: time.Duration(s.IdleTimeoutMs) * time.Millisecond,
		MaxCallsPerSession: s.MaxCallsPerSession, ReadTimeout: time.Duration(s.ReadTimeoutMs) * time.Millisecond,
		MaxConnections: s.MaxConnections, MaxConnectionsPerAddress: s.MaxConnectionsPerAddress,
	}
	if s.TLS != nil {
		if s.TLS.CertFile == "" || s.TLS.KeyFile == "" {
			return HTTPOptions{}, errors.New("mcp.tls: give certFile and keyFile")
		}
		cert, err := readFile(s.TLS.CertFile)
		if err != nil {
			return HTTPOptions{}, fmt.Errorf("mcp.tls.certFile: %w", err)
		}
		key, err := readFile(s.TLS.KeyFile)
		if err != nil {
			return HTTPOptions{}, fmt.Errorf("mcp.tls.keyFile: %w", err)
		}
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return HTTPOptions{}, fmt.Errorf("mcp.tls: %s and %s: %w", s.TLS.CertFile, s.TLS.KeyFile, err)
		}
		o.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	if s.JobGraceMs != nil {
		o.JobGrace = time.Duration(*s.JobGraceMs) * time.Millisecond
		if *s.JobGraceMs == 0 {
			o.JobGrace = -1
		}
	}
	switch {
	case s.TokenFile != "" && s.TokenEnv != "":
		return HTTPOptions{}, errors.New("mcp: tokenFile and tokenEnv: give one")
	case s.TokenFile != "":
		b, err := readFile(s.TokenFile)
		if err != nil {
			return HTTPOptions{}, fmt.Errorf("mcp.tokenFile: %w", err)
		}
		if o.Token = strings.TrimSpace(string(b)); o.Token == "" {
			return HTTPOptions{}, fmt.Errorf("mcp.tokenFile: %s is empty", s.TokenFile)
		}
	case s.TokenEnv != "":
		v, _ := lookupEnv(s.TokenEnv)
		if o.Token = strings.TrimSpace(v); o.Token == "" {
			return HTTPOptions{}, fmt.Errorf("mcp.tokenEnv: %s is not set, or empty", s.TokenEnv)
		}
	}
	return o, nil
}

func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxJobsPerSession <= 0 {
		o.MaxJobsPerSession = DefaultMaxJobsPerSession
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.JobGrace == 0 {
		o.JobGrace = DefaultJobGrace
	}
	if o.MaxCallsPerSession <= 0 {
		o.MaxCallsPerSession = DefaultCallsPerSession
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.MaxConnections <= 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxConnectionsPerAddress <= 0 {
		o.MaxConnectionsPerAddress = DefaultMaxConnsPerAddr
	}
	return o
}

// sessionfulVersions are the protocol versions served over HTTP: those
// with sessions (Mcp-Session-Id). A session owns its jobs; the 2026-07-28
// protocol has no sessions over HTTP, so its clients negotiate 2025-11-25.
func sessionfulVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

// HTTP serves the tools over MCP's streamable HTTP transport: every
// session owns its background jobs (no other session can list, read or
// kill them), within the limits of HTTPOptions.
type HTTP struct {
	tools       *Tools
	server      *mcp.Server
	handler     http.Handler
	opts        HTTPOptions
	stopNotices func()

	// opening makes the session count and a new session one step.
	opening sync.Mutex

	mu      sync.Mutex
	watched map[*mcp.ServerSession]bool
	posts   map[string]*posts      // the requests of watched sessions, by ID
	graces  map[string]*time.Timer // closed sessions whose jobs wait to be killed
	closed  bool
}

// NewHTTP returns the HTTP server of r's tools. opts.Owner is replaced: a
// session's ID owns its jobs.
func NewHTTP(ctx context.Context, r *host.Runtime, impl *mcp.Implementation, opts Options, hopts HTTPOptions) (*HTTP, error) {
	opts.Owner = func(ss *mcp.ServerSession) string { return ss.ID() }
	hopts = hopts.withDefaults()
	opts.MaxRunningJobs = hopts.MaxJobsPerSession
	opts.MaxAllRunningJobs = hopts.MaxSessions * hopts.MaxJobsPerSession
	opts.MaxRunningCalls = hopts.MaxCallsPerSession
	t, err := New(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	h := &HTTP{tools: t, opts: hopts, watched: map[*mcp.ServerSession]bool{}, posts: map[string]*posts{}, graces: map[string]*time.Timer{}}
	h.server = mcp.NewServer(impl, &mcp.ServerOptions{SupportedProtocolVersions: sessionfulVersions()})
	// Every session is watched from its first request (a client may call
	// tools without ever sending notifications/initialized).
	h.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				h.watchOnce(ss)
			}
			return next(ctx, method, req)
		}
	})
	t.Register(h.server)
	h.stopNotices = t.SendNotices(context.WithoutCancel(ctx), h.server)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, &mcp.StreamableHTTPOptions{
		SessionTimeout:      hopts.IdleTimeout,
		MaxRequestBodyBytes: hopts.MaxBodyBytes,
	})
	// A browser's cross-origin request is refused: the server answers no
	// preflight, and trusts no origin but its own.
	origins := http.NewCrossOriginProtection()
	origins.SetDenyHandler(http.HandlerFunc(refuseOrigin))
	var handler http.Handler = h.limitSessions(h.followCalls(sdk))
	handler = h.readBody(handler)
	handler = origins.Handler(handler)
	handler = sameOrigin(handler)
	if hopts.Token != "" {
		handler = h.requireToken(handler)
	}
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, handler)
	h.handler = mux
	return h, nil
}

// ServeHTTP serves a request.
func (h *HTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// requireToken serves only a request that carries the token (compared in
// constant time). Any other gets 401 with the challenge of RFC 6750, and
// its connection closes: a client without the token holds no connection.
func (h *HTTP) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		challenge := `Bearer realm="dsh-host"`
		switch {
		case !strings.EqualFold(scheme, "Bearer") || token == "":
			// No credentials: the challenge alone (RFC 6750, section 3.1).
		case subtle.ConstantTimeCompare([]byte(token), []byte(h.opts.Token)) == 1:
			next.ServeHTTP(w, r)
			return
		default:
			challenge += `, error="invalid_token", error_description="the token is not this server's"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Connection", "close")
		http.Error(w, "dsh-host: this server needs its bearer token (Authorization: Bearer TOKEN)", http.StatusUnauthorized)
	})
}

// sameOrigin refuses a request whose Origin is not the server's own, for
// every method: http.CrossOriginProtection lets GET through, and the MCP
// specification wants 403 for any request with a foreign Origin (a GET
// opens the session's stream).
func sameOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" {
			u, err := url.Parse(origin)
			if err != nil || u.Host != r.Host {
				refuseOrigin(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuseOrigin answers a cross-origin request with 403.
func refuseOrigin(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "dsh-host: a cross-origin request from "+r.Header.Get("Origin")+" is refused", http.StatusForbidden)
}

// readBody reads a request's body, at most MaxBodyBytes, within
// ReadTimeout, before anything serves it: a client that sends its body
// slowly, or never, holds its own connection and nothing else (no lock
// is held while a body arrives). Past the deadline, the answer is 408 and
// the connection closes.
func (h *HTTP) readBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(h.opts.ReadTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			http.Error(w, fmt.Sprintf("dsh-host: a request body is at most %d bytes (mcp.maxBodyBytes)", tooLarge.Limit), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("dsh-host: the request's body did not arrive within %s (mcp.readTimeoutMs)", h.opts.ReadTimeout), http.StatusRequestTimeout)
			return
		}
		// The response may stream for long: no read deadline for it.
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// limitSessions refuses a request that would open a session past
// MaxSessions, saying so. The body was read before (readBody): the lock
// is held while the session opens, never while a client sends.
func (h *HTTP) limitSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			// Counted and opened in one step.
			h.opening.Lock()
			defer h.opening.Unlock()
			n := 0
			for range h.server.Sessions() {
				n++
			}
			if n >= h.opts.MaxSessions {
				refuse(w, r, h.opts.MaxBodyBytes, fmt.Sprintf("dsh-host: the server holds %d sessions, its limit (mcp.maxSessions); close one first", n))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// refuse answers a request with a JSON-RPC error saying why, so that a
// client shows the reason (an HTTP status alone reaches its user as
// "Service Unavailable"); a body that is not one JSON-RPC request gets the
// status with the reason as text.
func refuse(w http.ResponseWriter, r *http.Request, maxBody int64, why string) {
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil || json.Unmarshal(body, &req) != nil || len(req.ID) == 0 {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	resp, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": req.ID,
		"error": map[string]any{"code": -32000, "message": why},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// posts are the POST requests of a session in flight. Once none is, for
// IdleTimeout (as the SDK counts a session idle), idle aborts the
// session's foreground calls: their client is gone, and the SDK's close
// of the session waits for them to end.
type posts struct {
	n    int
	idle *time.Timer
}

// followCalls follows the requests of the watched sessions: their POSTs,
// which carry the calls (see posts), and their DELETE, which ends the
// session and aborts its calls first (the SDK's close waits for them).
func (h *HTTP) followCalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		h.mu.Lock()
		p := h.posts[id]
		if p != nil && r.Method == http.MethodPost {
			p.n++
			p.idle.Stop()
		}
		h.mu.Unlock()
		switch {
		case p == nil:
		case r.Method == http.MethodDelete:
			h.tools.abortCalls(id)
		case r.Method == http.MethodPost:
			defer func() {
				h.mu.Lock()
				defer h.mu.Unlock()
				if p.n--; p.n == 0 {
					p.idle.Reset(h.opts.IdleTimeout)
				}
			}()
		}
		next.ServeHTTP(w, r)
	})
}

// watchOnce watches ss, once.
func (h *HTTP) watchOnce(ss *mcp.ServerSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.watched[ss] {
		return
	}
	h.watched[ss] = true
	id := ss.ID()
	p := &posts{idle: time.AfterFunc(h.opts.IdleTimeout, func() { h.tools.abortCalls(id) })}
	p.idle.Stop() // until its first POST ends
	h.posts[id] = p
	go h.watch(ss)
}

// watch waits for a session to close (its client said so, or went idle
// past IdleTimeout), then, after JobGrace, kills its background jobs and
// forgets their notices: nobody is left to read them.
func (h *HTTP) watch(ss *mcp.ServerSession) {
	_ = ss.Wait()
	owner := ss.ID()
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.watched, ss)
	h.posts[owner].idle.Stop()
	delete(h.posts, owner)
	if h.closed {
		return
	}
	h.graces[owner] = time.AfterFunc(max(h.opts.JobGrace, 0), func() {
		h.mu.Lock()
		delete(h.graces, owner)
		h.mu.Unlock()
		h.tools.endOwner(owner)
	})
}

// ShutdownGrace is how long Serve lets requests in flight finish once its
// ctx is done, before it closes their connections.
const ShutdownGrace = 5 * time.Second

// Serve serves h on ln until ctx is done, then shuts down: the sessions
// close, requests in flight get ShutdownGrace, and the connections close.
// It returns nil after a shutdown, and the error that stopped it
// otherwise. The runtime's Close, after it, kills every job.
//
// A connection must send each request's headers within ReadTimeout (and
// its TLS handshake, when TLS is served), and is closed after ReadTimeout
// idle; the open connections are bounded, per remote address and in all.
func (h *HTTP) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: h.opts.ReadTimeout,
		IdleTimeout:       h.opts.ReadTimeout,
		TLSConfig:         h.opts.TLS,
	}
	srv.RegisterOnShutdown(h.CloseSessions)
	ln = netutil.LimitListener(limitPerAddress(ln, h.opts.MaxConnectionsPerAddress), connectionLimit(h.opts.MaxConnections))
	served := make(chan error, 1)
	go func() {
		if h.opts.TLS != nil {
			served <- srv.ServeTLS(ln, "", "")
			return
		}
		served <- srv.Serve(ln)
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	_ = srv.Close()
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the grace is over: what was in flight is cut
	}
	return err
}

// CloseSessions closes every session (a server shutting down): their
// long-lived streams end, so that requests in flight can drain.
func (h *HTTP) CloseSessions() {
	for ss := range h.server.Sessions() {
		_ = ss.Close()
	}
}

// Close stops the notices and the graces; the runtime's Close kills what
// is left.
func (h *HTTP) Close() {
	h.mu.Lock()
	h.closed = true
	for _, t := range h.graces {
		t.Stop()
	}
	h.graces = nil
	for _, p := range h.posts {
		p.idle.Stop()
	}
	h.mu.Unlock()
	h.stopNotices()
}

// endOwner kills owner's running jobs (Kill returns once each has
// settled), takes the notices of their ends, which nobody will read, and
// ends owner's partition in the executor (its container goes).
func (t *Tools) endOwner(owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, j := range t.jobs.List(owner) {
		if j.State == host.JobRunning {
			if _, err := t.jobs.Kill(ctx, owner, j.ID); err != nil {
				t.logger.Warn("killing a closed session's job", "job", j.ID, "error", err)
			}
		}
	}
	t.jobs.Notices(owner)
	t.tool.ForgetSession(owner)
	if err := pluginapi.ClosePartition(ctx, t.shell, owner); err != nil {
		t.logger.Warn("ending a closed session's partition", "partition", owner, "error", err)
	}
}

// IsLoopback says whether addr (host:port) listens on loopback only.
func IsLoopback(addr string) bool {
	hostPart, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if hostPart == "localhost" {
		return true
	}
	ip := net.ParseIP(hostPart)
	return ip != nil && ip.IsLoopback()
}

// ClientURLs are the URLs a client can use to reach a server listening at
// addr (what the listener says, ln.Addr()): its own address when it names
// one. A wildcard listener ("0.0.0.0:8080", "[::]:8080") has no address a
// client can dial: the first URL is then this machine's loopback of the
// listener's family (127.0.0.1, [::1], which every IPv6 wildcard listener
// takes, dual-stack or not), and the second its host name, for other
// machines.
func ClientURLs(scheme string, addr net.Addr) []string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return []string{scheme + "://" + addr.String() + HTTPPath}
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return []string{scheme + "://" + net.JoinHostPort(host, port) + HTTPPath}
	}
	loopback := "127.0.0.1"
	if ip.To4() == nil {
		loopback = "::1"
	}
	urls := []string{scheme + "://" + net.JoinHostPort(loopback, port) + HTTPPath}
	if name, err := os.Hostname(); err == nil && name != "" {
		urls = append(urls, scheme+"://"+net.JoinHostPort(name, port)+HTTPPath)
	}
	return urls
}
