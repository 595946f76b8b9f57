// Command floor is the design floor of a cold start, which the bench
// measures dsh-host run against (cold_start_vs_design_floor): the least a
// host can do that launches a plugin over go-plugin gRPC and has it run
// one command. Run without arguments, it is the host: it makes a pair of
// P-256 certificates as dsh-host does (one for each end, each trusting
// only the other, over ClientConfig.TLSConfig and ServeConfig.TLSProvider),
// starts itself as the plugin, calls one RPC, which runs `bash -c true`
// there, and exits with the command's status. It links the same go-plugin
// and grpc as dsh-host, and nothing else of it.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var handshake = plugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "DSH_BENCH_FLOOR", MagicCookieValue: "floor"}

// keysVar hands the plugin its certificate, its key and the host's
// certificate (base64 DER, comma-separated).
const keysVar = "DSH_BENCH_FLOOR_KEYS"

func main() {
	if os.Getenv(handshake.MagicCookieKey) == handshake.MagicCookieValue {
		serve()
		return
	}
	code, err := host()
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(125)
	}
	os.Exit(code)
}

func host() (int, error) {
	hostCert, hostKey, err := selfSigned("floor-host")
	if err != nil {
		return 0, err
	}
	plugCert, plugKey, err := selfSigned("localhost")
	if err != nil {
		return 0, err
	}
	plugDER, err := x509.MarshalPKCS8PrivateKey(plugKey)
	if err != nil {
		return 0, err
	}
	parsed, err := x509.ParseCertificate(plugCert)
	if err != nil {
		return 0, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(parsed)
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self)
	b64 := base64.StdEncoding.EncodeToString
	cmd.Env = append(os.Environ(), keysVar+"="+b64(plugCert)+","+b64(plugDER)+","+b64(hostCert))
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          plugin.PluginSet{"floor": &floorPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{hostCert}, PrivateKey: hostKey}},
			RootCAs:      roots, ServerName: "localhost", MinVersion: tls.VersionTLS13,
		},
		Logger: hclog.NewNullLogger(),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		return 0, err
	}
	raw, err := rpc.Dispense("floor")
	if err != nil {
		return 0, err
	}
	status := new(wrapperspb.Int32Value)
	if err := raw.(*grpc.ClientConn).Invoke(context.Background(), "/floor.Floor/Run", &emptypb.Empty{}, status); err != nil {
		return 0, err
	}
	return int(status.Value), nil
}

func serve() {
	parts := strings.Split(os.Getenv(keysVar), ",")
	provide := func() (*tls.Config, error) {
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s: want 3 parts", keysVar)
		}
		var der [3][]byte
		for i, p := range parts {
			var err error
			if der[i], err = base64.StdEncoding.DecodeString(p); err != nil {
				return nil, err
			}
		}
		key, err := x509.ParsePKCS8PrivateKey(der[1])
		if err != nil {
			return nil, err
		}
		hostCert, err := x509.ParseCertificate(der[2])
		if err != nil {
			return nil, err
		}
		clients := x509.NewCertPool()
		clients.AddCert(hostCert)
		return &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{der[0]}, PrivateKey: key}},
			ClientCAs:    clients, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13,
		}, nil
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         plugin.PluginSet{"floor": &floorPlugin{}},
		GRPCServer:      plugin.DefaultGRPCServer,
		TLSProvider:     provide,
		Logger:          hclog.NewNullLogger(),
	})
}

// floorPlugin serves one RPC, Run, which runs `bash -c true` and returns
// its exit status.
type floorPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (*floorPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "floor.Floor",
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{MethodName: "Run", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			if err := dec(new(emptypb.Empty)); err != nil {
				return nil, err
			}
			err := exec.CommandContext(ctx, "bash", "-c", "true").Run()
			code := 0
			if exit, ok := err.(*exec.ExitError); ok {
				code = exit.ExitCode()
			} else if err != nil {
				return nil, err
			}
			return wrapperspb.Int32(int32(code)), nil
		}}},
	}, struct{}{})
	return nil
}

func (*floorPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return conn, nil
}

// selfSigned makes an ECDSA P-256 key and a certificate of it for name,
// signed by itself, as dsh-host makes its plugins' keys.
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
		SerialNumber: serial, Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	return der, key, err
}
