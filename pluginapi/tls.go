package pluginapi

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// TLSFDVar names, in a plugin's environment, the descriptor on which its
// host hands it the keys of their connection (see TLSPayload). A plugin
// reads them once, at Serve, and closes the descriptor. Without it (a host
// of go-plugin's AutoMTLS), the plugin negotiates go-plugin's automatic
// mTLS instead.
const TLSFDVar = "DSH_PLUGIN_TLS_FD"

// The host makes both ends' keys and hands them to go-plugin through its
// documented hooks (ClientConfig.TLSConfig in the host, ServeConfig.TLSProvider
// here), as Vault does, rather than have each process make a P-521 key and
// certificate for go-plugin's automatic mTLS on every start. The plugin's
// private key reaches it only through an inherited pipe it reads at once,
// never through its environment; the host's key never leaves the host.

// TLSPayload is what a host writes to the plugin's TLSFDVar descriptor:
// the plugin's certificate and private key, then the host's certificate,
// PEM-encoded.
func TLSPayload(serverCert, serverKeyPKCS8, clientCert []byte) []byte {
	var out []byte
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: serverCert})...)
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: serverKeyPKCS8})...)
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCert})...)
	return out
}

// serverTLS reads the keys its host handed this plugin, if it did: a TLS
// configuration that requires the host's certificate. nil without
// TLSFDVar (go-plugin's automatic mTLS then applies).
func serverTLS() (*tls.Config, error) {
	v := os.Getenv(TLSFDVar)
	if v == "" {
		return nil, nil
	}
	os.Unsetenv(TLSFDVar) // nothing this plugin starts sees it
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("pluginapi: %s=%q is no descriptor", TLSFDVar, v)
	}
	f := os.NewFile(uintptr(fd), "dsh-plugin-tls")
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("pluginapi: reading the connection's keys: %w", err)
	}
	var blocks []*pem.Block
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		blocks = append(blocks, b)
	}
	if len(blocks) != 3 || blocks[0].Type != "CERTIFICATE" || blocks[1].Type != "PRIVATE KEY" || blocks[2].Type != "CERTIFICATE" {
		return nil, errors.New("pluginapi: the connection's keys are not a certificate, a key and a certificate")
	}
	key, err := x509.ParsePKCS8PrivateKey(blocks[1].Bytes)
	if err != nil {
		return nil, fmt.Errorf("pluginapi: the plugin's key: %w", err)
	}
	host, err := x509.ParseCertificate(blocks[2].Bytes)
	if err != nil {
		return nil, fmt.Errorf("pluginapi: the host's certificate: %w", err)
	}
	hosts := x509.NewCertPool()
	hosts.AddCert(host)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{blocks[0].Bytes}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    hosts,
		MinVersion:   tls.VersionTLS13,
	}, nil
}
