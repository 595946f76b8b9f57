package mcpserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"
)

// The mcp section's token comes from the file or the variable it names;
// either missing, empty, or both given is an error that names the key.
func TestHTTPOptionsTakeTheTokenFromOnePlace(t *testing.T) {
	files := map[string]string{"/tok": "  s3cret\n", "/empty": "\n"}
	readFile := func(p string) ([]byte, error) {
		if s, ok := files[p]; ok {
			return []byte(s), nil
		}
		return nil, os.ErrNotExist
	}
	env := map[string]string{"TOK": "from-env", "BLANK": " "}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		raw, token, err string
	}{
		{``, "", ""},
		{`{"tokenFile": "/tok"}`, "s3cret", ""},
		{`{"tokenEnv": "TOK"}`, "from-env", ""},
		{`{"tokenFile": "/tok", "tokenEnv": "TOK"}`, "", "give one"},
		{`{"tokenFile": "/empty"}`, "", "mcp.tokenFile: /empty is empty"},
		{`{"tokenFile": "/missing"}`, "", "mcp.tokenFile"},
		{`{"tokenEnv": "UNSET"}`, "", "mcp.tokenEnv: UNSET is not set"},
		{`{"tokenEnv": "BLANK"}`, "", "mcp.tokenEnv: BLANK is not set"},
		{`{"tokn": "x"}`, "", "unknown field"},
	} {
		o, err := HTTPOptionsFrom([]byte(tc.raw), readFile, lookup)
		switch {
		case tc.err == "" && (err != nil || o.Token != tc.token):
			t.Errorf("%s: token %q, %v; want %q", tc.raw, o.Token, err, tc.token)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v; want an error saying %q", tc.raw, err, tc.err)
		}
	}
	if _, err := HTTPOptionsFrom([]byte(`{"tokenFile": "/missing"}`), readFile, lookup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing token file: %v; want it to say so", err)
	}
}

// A grace of 0 kills a closed session's jobs at once; unset, the default.
func TestHTTPOptionsGrace(t *testing.T) {
	o, _ := HTTPOptionsFrom([]byte(`{"jobGraceMs": 0}`), os.ReadFile, os.LookupEnv)
	if o.withDefaults().JobGrace >= 0 {
		t.Errorf("jobGraceMs 0: grace %v; want none", o.withDefaults().JobGrace)
	}
	o, _ = HTTPOptionsFrom(nil, os.ReadFile, os.LookupEnv)
	if got := o.withDefaults(); got.JobGrace != DefaultJobGrace || got.IdleTimeout != DefaultIdleTimeout || got.MaxSessions != DefaultMaxSessions {
		t.Errorf("defaults: %+v", got)
	}
	o, _ = HTTPOptionsFrom([]byte(`{"jobGraceMs": 1500, "idleTimeoutMs": 2000}`), os.ReadFile, os.LookupEnv)
	if o.JobGrace != 1500*time.Millisecond || o.IdleTimeout != 2*time.Second {
		t.Errorf("given: %+v", o)
	}
}

// A port on loopback, or localhost, needs no token; another address does.
func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:80": true, "[::1]:80": true, "localhost:80": true, "127.1.2.3:9": true,
		"0.0.0.0:80": false, ":80": false, "10.0.0.1:80": false, "example.com:80": false, "nonsense": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// The new limits take their defaults, or the values given.
func TestHTTPOptionsConnectionLimits(t *testing.T) {
	o, _ := HTTPOptionsFrom(nil, os.ReadFile, os.LookupEnv)
	d := o.withDefaults()
	if d.MaxCallsPerSession != DefaultCallsPerSession || d.ReadTimeout != DefaultReadTimeout ||
		d.MaxConnections != DefaultMaxConnections || d.MaxConnectionsPerAddress != DefaultMaxConnsPerAddr || d.TLS != nil {
		t.Errorf("defaults: %+v", d)
	}
	o, err := HTTPOptionsFrom([]byte(`{"maxCallsPerSession": 2, "readTimeoutMs": 1500, "maxConnections": 10, "maxConnectionsPerAddress": 3}`), os.ReadFile, os.LookupEnv)
	if err != nil || o.MaxCallsPerSession != 2 || o.ReadTimeout != 1500*time.Millisecond || o.MaxConnections != 10 || o.MaxConnectionsPerAddress != 3 {
		t.Errorf("given: %+v, %v", o, err)
	}
	if n := descriptorLimit(); n > 0 && connectionLimit(1<<20) > n/2 {
		t.Errorf("connections bounded at %d, with %d file descriptors: want at most half", connectionLimit(1<<20), n)
	}
}

// mcp.tls names a certificate and its key, both read and checked when
// the options are made: a missing file, or a key that is not the
// certificate's, is an error that names the key.
func TestHTTPOptionsTLS(t *testing.T) {
	cert, key := testCert(t)
	_, otherKey := testCert(t)
	files := map[string][]byte{"/cert": cert, "/key": key, "/other": otherKey}
	readFile := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, os.ErrNotExist
	}
	o, err := HTTPOptionsFrom([]byte(`{"tls": {"certFile": "/cert", "keyFile": "/key"}}`), readFile, os.LookupEnv)
	if err != nil || o.TLS == nil || len(o.TLS.Certificates) != 1 {
		t.Fatalf("a certificate and its key: %+v, %v", o.TLS, err)
	}
	for raw, want := range map[string]string{
		`{"tls": {"certFile": "/missing", "keyFile": "/key"}}`:  "mcp.tls.certFile",
		`{"tls": {"certFile": "/cert", "keyFile": "/missing"}}`: "mcp.tls.keyFile",
		`{"tls": {"certFile": "/cert", "keyFile": "/other"}}`:   "mcp.tls: /cert and /other",
		`{"tls": {"certFile": "/cert"}}`:                        "give certFile and keyFile",
	} {
		if _, err := HTTPOptionsFrom([]byte(raw), readFile, os.LookupEnv); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error saying %q", raw, err, want)
		}
	}
}

// testCert is a self-signed certificate and its key, in PEM.
func testCert(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// A session's foreground calls are bounded; abort cancels its calls (with
// the cause) and no other session's; an ended call frees its place.
func TestRunningCallsBoundAndAbort(t *testing.T) {
	c := newRunningCalls(2)
	ctx1, end1, _, ok1 := c.begin(context.Background(), "a")
	_, end2, _, ok2 := c.begin(context.Background(), "a")
	_, _, n, ok3 := c.begin(context.Background(), "a")
	if !ok1 || !ok2 || ok3 || n != 2 {
		t.Fatalf("three calls with a bound of 2: %v %v %v (%d running)", ok1, ok2, ok3, n)
	}
	ctxB, endB, _, okB := c.begin(context.Background(), "b")
	if !okB {
		t.Fatal("another session's call is refused")
	}
	c.abort("a")
	if !errors.Is(context.Cause(ctx1), errClientGone) {
		t.Errorf("an aborted call's cause: %v", context.Cause(ctx1))
	}
	if ctxB.Err() != nil {
		t.Error("aborting a session's calls cancelled another session's")
	}
	end1()
	if _, end, _, ok := c.begin(context.Background(), "a"); !ok {
		t.Error("an ended call did not free its place")
	} else {
		end()
	}
	end2()
	endB()
	if len(c.by) != 0 {
		t.Errorf("calls left after every end: %v", c.by)
	}
}
