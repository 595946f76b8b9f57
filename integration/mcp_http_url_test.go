package integration

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server on every interface logs a URL a client can dial (never 0.0.0.0
// or [::]) and one for other machines, and a client at the logged URL is
// served.
func TestMCPHTTPLogsAURLAClientCanUse(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		t.Run(addr, func(t *testing.T) {
			if strings.HasPrefix(addr, "[") {
				ln, err := net.Listen("tcp", "[::1]:0")
				if err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("no IPv6 loopback under CI=true: %v", err)
					}
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				ln.Close()
			}
			tag := scenario(t)
			settings := filepath.Join(t.TempDir(), "settings.yaml")
			if err := os.WriteFile(settings, []byte(tokenSettings()), 0o600); err != nil {
				t.Fatal(err)
			}
			srv := startHTTPServerAt(t, tag, addr, nil, []string{"--settings", settings}, "DSH_TEST_MCP_TOKEN="+testToken)
			u, err := url.Parse(srv.url)
			if err != nil {
				t.Fatal(err)
			}
			if ip := net.ParseIP(u.Hostname()); ip == nil || ip.IsUnspecified() || !ip.IsLoopback() {
				t.Errorf("the logged URL %s: want this machine's loopback, not a wildcard", srv.url)
			}
			if !strings.Contains(srv.log(), "from_other_machines=http://") {
				t.Errorf("no URL for other machines in the log:\n%s", srv.log())
			}
			cs, _ := httpSession(t, srv.url, testToken)
			if out, isErr := call(t, cs, "bash", map[string]any{"command": "echo reached"}); isErr || strings.TrimSpace(out) != "reached" {
				t.Errorf("bash at the logged URL: %q (error %v)", out, isErr)
			}
		})
	}
}
