package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/mcpserver"
)

// httpAddr is where --http listens: ADDR as given, but a port alone
// ("8080", ":8080") is on 127.0.0.1; every interface must be asked for
// ("0.0.0.0:8080").
func httpAddr(addr string) string {
	if !strings.Contains(addr, ":") {
		return "127.0.0.1:" + addr
	}
	if strings.HasPrefix(addr, ":") {
		return "127.0.0.1" + addr
	}
	return addr
}

// httpOptions reads the settings' mcp section (checked even for stdio);
// for addr, it refuses an address other than loopback without a token.
func httpOptions(file *host.SettingsFile, addr string) (mcpserver.HTTPOptions, error) {
	var raw []byte
	if file != nil {
		var err error
		if raw, err = file.Section("mcp", mcpserver.HTTPSchema); err != nil {
			return mcpserver.HTTPOptions{}, err
		}
	}
	if addr == "" {
		return mcpserver.HTTPOptions{}, nil
	}
	o, err := mcpserver.HTTPOptionsFrom(raw, os.ReadFile, os.LookupEnv)
	if err != nil {
		return o, file.Locate("mcp", err) // at the line of the key it names
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return o, fmt.Errorf("%w: --http %s: want host:port (127.0.0.1:8080)", errUsage, addr)
	}
	if o.Token == "" && !mcpserver.IsLoopback(addr) {
		return o, fmt.Errorf("%w: --http %s is reachable from other machines, and no token is set: "+
			"give mcp.tokenFile or mcp.tokenEnv in the settings, or listen on 127.0.0.1", errUsage, addr)
	}
	return o, nil
}

// serveHTTP serves the tools over streamable HTTP at addr until ctx is
// done (SIGTERM, SIGINT); the caller's runtime Close then kills every job.
func serveHTTP(ctx context.Context, r *host.Runtime, impl *mcp.Implementation, opts mcpserver.Options, hopts mcpserver.HTTPOptions, addr string, logger hclog.Logger) int {
	h, err := mcpserver.NewHTTP(ctx, r, impl, opts, hopts)
	if err != nil {
		return cannot(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cannot(fmt.Errorf("--http %s: %w", addr, err))
	}
	scheme := "http"
	if hopts.TLS != nil {
		scheme = "https"
	} else if hopts.Token != "" && !mcpserver.IsLoopback(addr) {
		logger.Warn("the bearer token crosses the network in clear: serve TLS (mcp.tls.certFile and keyFile in the settings), or put a TLS proxy in front", "address", addr)
	}
	// A URL a client can dial: never [::] or 0.0.0.0.
	urls := mcpserver.ClientURLs(scheme, ln.Addr())
	fields := []any{"url", urls[0]}
	if len(urls) > 1 {
		fields = append(fields, "from_other_machines", urls[1])
	}
	logger.Info("serving MCP over streamable HTTP", append(fields, "token", hopts.Token != "", "tls", hopts.TLS != nil)...)
	if err := h.Serve(ctx, ln); err != nil {
		logger.Error("serving MCP over HTTP", "error", err)
		return 1
	}
	return 0
}
