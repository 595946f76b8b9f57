package pluginapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// ConnectionKeys are the keys of one plugin connection, which its host
// makes for both ends (see TLSFDVar). A host (dsh-host, and pluginapitest's
// Launch, so that the suite runs what production runs) passes Host to
// go-plugin as ClientConfig.TLSConfig and hands the plugin its share with
// Hand.
type ConnectionKeys struct {
	// Host presents the host's certificate and trusts only the plugin's.
	Host *tls.Config
	// Payload is what the plugin reads on its TLSFDVar descriptor: its
	// certificate and key, and the host's certificate (TLSPayload).
	Payload []byte
}

// NewConnectionKeys makes a fresh pair of P-256 certificates, one for the
// host and one for the plugin (as "localhost"), each trusted only by the
// other end.
func NewConnectionKeys() (*ConnectionKeys, error) {
	hostCert, hostKey, err := selfSigned("dsh-host")
	if err != nil {
		return nil, err
	}
	plugCert, plugKey, err := selfSigned("localhost")
	if err != nil {
		return nil, err
	}
	plugPKCS8, err := x509.MarshalPKCS8PrivateKey(plugKey)
	if err != nil {
		return nil, err
	}
	plugParsed, err := x509.ParseCertificate(plugCert)
	if err != nil {
		return nil, err
	}
	plugins := x509.NewCertPool()
	plugins.AddCert(plugParsed)
	return &ConnectionKeys{
		Host: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{hostCert}, PrivateKey: hostKey}},
			RootCAs:      plugins,
			ServerName:   "localhost",
			MinVersion:   tls.VersionTLS13,
		},
		Payload: TLSPayload(plugCert, plugPKCS8, hostCert),
	}, nil
}

// Hand arranges for the plugin that cmd starts to be handed its keys: a
// pipe that holds the payload, inherited as one more of cmd.ExtraFiles and
// named by TLSFDVar in cmd.Env (set cmd.Env before; go-plugin adds its own
// variables after). The plugin's private key never passes through its
// environment. Call done once go-plugin's Client has returned, however:
// it closes this process's copy of the pipe.
func (k *ConnectionKeys) Hand(cmd *exec.Cmd) (done func(), err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("the connection's keys: %w", err)
	}
	_, err = w.Write(k.Payload) // far below a pipe's buffer
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("the connection's keys: %w", err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Env = append(cmd.Env, TLSFDVar+"="+strconv.Itoa(fd))
	return func() { r.Close() }, nil
}

// selfSigned makes an ECDSA P-256 key and a certificate of it, signed by
// itself, for name, valid for a day (a plugin lives as long as its host).
// P-256, not Ed25519: Go computes Ed25519's base-point tables at a
// process's first key, signature and verification (about 1.5 ms here,
// paid by the host and again by the plugin on every cold start), while
// P-256's are compiled in (0.2 ms for the first key).
func selfSigned(name string) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name},
		DNSNames:              []string{name},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return der, key, err
}
