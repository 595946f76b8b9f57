package pluginapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"io"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/credentials"
)

// testTLS is a server configuration with a fresh self-signed certificate
// for "localhost", and a client configuration that trusts it alone.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS13},
		&tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS13, NextProtos: []string{"h2"}}
}

// writeCounter counts the writes made to a connection.
type writeCounter struct {
	net.Conn
	writes atomic.Int32
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A plugin's TLS connection hands the socket a Write's records together:
// a megabyte in one write, not one per 16 KiB record, each waking the
// host; and the host reads every byte, in order.
func TestPluginTLSWritesAWritesRecordsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		creds func(*tls.Config) credentials.TransportCredentials
		most  int32
	}{
		{"gathered", func(c *tls.Config) credentials.TransportCredentials { return gatheredTLS{credentials.NewTLS(c)} }, 1},
		// The control: the same check finds crypto/tls's own writes.
		{"tls alone", credentials.NewTLS, 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			defer goleak.VerifyNone(t, before)
			host, plugin, counted := tlsPair(t, tc.creds)
			data := make([]byte, 1<<20)
			for i := range data {
				data[i] = byte('a' + i%26)
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(io.LimitReader(host, int64(len(data))))
				got <- b
			}()
			was := counted.writes.Load()
			if n, err := plugin.Write(data); err != nil || n != len(data) {
				t.Fatalf("Write: %d, %v", n, err)
			}
			writes := counted.writes.Load() - was
			if b := <-got; !bytes.Equal(b, data) {
				t.Fatalf("the host read %d bytes, not the %d written, in order", len(b), len(data))
			}
			if tc.most == 1 && writes != 1 {
				t.Errorf("a 1 MiB Write reached the socket in %d writes, want 1", writes)
			}
			if tc.most != 1 && writes < 64 {
				t.Errorf("crypto/tls alone wrote 1 MiB in %d writes: this test no longer sees what gatheredTLS is for", writes)
			}
		})
	}
}

// tlsPair is a TLS connection over an in-memory pipe: the host's client
// end, and the plugin's end made by creds, whose socket counts writes.
// The pipe is closed when the test ends.
func tlsPair(t *testing.T, creds func(*tls.Config) credentials.TransportCredentials) (host, plugin net.Conn, counted *writeCounter) {
	t.Helper()
	hostEnd, pluginEnd := net.Pipe()
	// Closed under TLS: a close_notify would wait for a reader.
	t.Cleanup(func() {
		hostEnd.Close()
		pluginEnd.Close()
	})
	counted = &writeCounter{Conn: pluginEnd}
	host, plugin = handshake(t, hostEnd, counted, credentials.NewTLS, creds)
	return host, plugin, counted
}

// handshake runs the TLS handshake of a plugin's connection between
// hostEnd, with hostCreds, and pluginEnd, with pluginCreds, and returns
// both ends' TLS connections.
func handshake(t *testing.T, hostEnd, pluginEnd net.Conn, hostCreds, pluginCreds func(*tls.Config) credentials.TransportCredentials) (host, plugin net.Conn) {
	t.Helper()
	serverConf, clientConf := testTLS(t)
	type shaken struct {
		conn net.Conn
		err  error
	}
	shook := make(chan shaken, 1)
	go func() {
		conn, _, err := pluginCreds(serverConf).ServerHandshake(pluginEnd)
		shook <- shaken{conn, err}
	}()
	host, _, err := hostCreds(clientConf).ClientHandshake(context.Background(), "localhost", hostEnd)
	if err != nil {
		t.Fatal(err)
	}
	h := <-shook
	if h.err != nil {
		t.Fatal(h.err)
	}
	return host, h.conn
}

// Closing a plugin's connection while a Write waits for a host that reads
// no more ends the Write at once, and the Close with it (TLS's own Close
// would wait 5 s to send close_notify behind the gathered records); the
// connection's writes fail from then on.
func TestPluginTLSClosesDuringAGatheredWrite(t *testing.T) {
	before := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, before)
	_, plugin, _ := tlsPair(t, func(c *tls.Config) credentials.TransportCredentials { return gatheredTLS{credentials.NewTLS(c)} })
	wrote := make(chan error, 1)
	go func() {
		_, err := plugin.Write(make([]byte, 1<<20)) // the host never reads it
		wrote <- err
	}()
	time.Sleep(100 * time.Millisecond) // the Write waits in its flush
	began := time.Now()
	_ = plugin.Close()
	if took := time.Since(began); took > time.Second {
		t.Errorf("Close took %v while a Write waited for the host", took)
	}
	select {
	case err := <-wrote:
		if err == nil {
			t.Error("the Write that Close cut short reported no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the Write still waited 5 s after Close")
	}
	if _, err := plugin.Write([]byte("more")); err == nil {
		t.Error("a Write after Close succeeded")
	}
}
