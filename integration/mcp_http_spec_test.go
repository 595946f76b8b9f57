package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the MCP specification says a server MUST do over HTTP: 403 for a
// foreign Origin on every method (a GET opens the session's stream), a
// 401 that says how to authenticate (WWW-Authenticate, RFC 6750).
func TestMCPHTTPSpecMusts(t *testing.T) {
	tag := scenario(t)
	srv := startHTTPServer(t, tag, tokenSettings(), "DSH_TEST_MCP_TOKEN="+testToken)
	// A session without its stream (GET), which the GETs below would open.
	b := newBearer(testToken)
	t.Cleanup(b.base.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "spec", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.url, HTTPClient: &http.Client{Transport: b}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	for _, tc := range []struct {
		name, method, token, origin string
		want                        int
		challenge                   string
	}{
		{"GET with a foreign Origin", http.MethodGet, testToken, "http://evil.example", http.StatusForbidden, ""},
		{"DELETE with a foreign Origin", http.MethodDelete, testToken, "http://evil.example", http.StatusForbidden, ""},
		{"GET with an opaque Origin", http.MethodGet, testToken, "null", http.StatusForbidden, ""},
		{"GET without a token", http.MethodGet, "", "", http.StatusUnauthorized, `Bearer realm="dsh-host"`},
		{"GET with a wrong token", http.MethodGet, "not-" + testToken, "", http.StatusUnauthorized, `Bearer realm="dsh-host", error="invalid_token"`},
	} {
		req, err := http.NewRequest(tc.method, srv.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s, want %d", tc.name, resp.Status, tc.want)
		}
		if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, tc.challenge) || (tc.challenge == "") != (got == "") {
			t.Errorf("%s: WWW-Authenticate %q, want %q", tc.name, got, tc.challenge)
		}
	}
	// The session is still the client's: the refused requests did not end it.
	if out, isErr := call(t, cs, "bash", map[string]any{"command": "echo still"}); isErr || out != "still" {
		t.Errorf("after the refusals: %q", out)
	}
}

// With mcp.tls the server speaks HTTPS alone; a token on an address other
// machines reach, without TLS, is warned of.
func TestMCPHTTPServesTLS(t *testing.T) {
	tag := scenario(t)
	dir := t.TempDir()
	pool := writeCert(t, dir)
	settings := tokenSettings("tls:", "  certFile: "+filepath.Join(dir, "cert.pem"), "  keyFile: "+filepath.Join(dir, "key.pem"))
	srv := startHTTPServer(t, tag, settings, "DSH_TEST_MCP_TOKEN="+testToken)
	if !strings.HasPrefix(srv.url, "https://127.0.0.1:") {
		t.Fatalf("the URL served: %q; want https", srv.url)
	}
	b := newBearer(testToken)
	b.base.TLSClientConfig = &tls.Config{RootCAs: pool}
	t.Cleanup(b.base.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "tls", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.url, HTTPClient: &http.Client{Transport: b}}, nil)
	if err != nil {
		t.Fatalf("connecting over TLS: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if out, isErr := call(t, cs, "bash", map[string]any{"command": "echo over tls"}); isErr || out != "over tls" {
		t.Errorf("bash over TLS: %q", out)
	}
	resp, err := http.Post("http://"+strings.TrimPrefix(srv.url, "https://"), "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS server: %s; want it refused", resp.Status)
		}
	}
	if strings.Contains(srv.log(), "in clear") {
		t.Errorf("a warning of clear text, on loopback with TLS:\n%s", srv.log())
	}

	open := startHTTPServerAt(t, tag, "0.0.0.0:0", nil, []string{"--settings", writeSettings(t, tokenSettings())}, "DSH_TEST_MCP_TOKEN="+testToken)
	if log := open.log(); !strings.Contains(log, "the bearer token crosses the network in clear") {
		t.Errorf("a token on 0.0.0.0 without TLS: no warning\n%s", log)
	}
}

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// (cert.pem, key.pem) to dir, and returns a pool that trusts it.
func writeCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "dsh-host test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}
