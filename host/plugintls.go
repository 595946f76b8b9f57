package host

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"time"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// pluginKeys are the keys of one plugin's connection, made by the host for
// both ends (see pluginapi.TLSFDVar): the host's TLS configuration, which
// presents its own certificate and trusts only the plugin's, and what the
// plugin is handed (its certificate and key, and the host's certificate).
type pluginKeys struct {
	client  *tls.Config
	payload []byte
}

// newPluginKeys makes a fresh pair of P-256 certificates, one for the
// host and one for the plugin (as "localhost"), each trusted only by the
// other end.
func newPluginKeys() (*pluginKeys, error) {
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
	return &pluginKeys{
		client: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{hostCert}, PrivateKey: hostKey}},
			RootCAs:      plugins,
			ServerName:   "localhost",
			MinVersion:   tls.VersionTLS13,
		},
		payload: pluginapi.TLSPayload(plugCert, plugPKCS8, hostCert),
	}, nil
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
