package mcpserver

import (
	"net"
	"net/url"
	"os"
	"testing"
)

// A listener's own address is the URL; a wildcard one's is the loopback
// of its family, then the host name for other machines.
func TestClientURLsNeverNameAWildcard(t *testing.T) {
	name, _ := os.Hostname()
	for _, tc := range []struct {
		addr string
		want []string
	}{
		{"127.0.0.1:8080", []string{"http://127.0.0.1:8080" + HTTPPath}},
		{"[::1]:8080", []string{"http://[::1]:8080" + HTTPPath}},
		{"192.0.2.7:8080", []string{"http://192.0.2.7:8080" + HTTPPath}},
		{"0.0.0.0:8080", []string{"http://127.0.0.1:8080" + HTTPPath, "http://" + net.JoinHostPort(name, "8080") + HTTPPath}},
		{"[::]:8080", []string{"http://[::1]:8080" + HTTPPath, "http://" + net.JoinHostPort(name, "8080") + HTTPPath}},
	} {
		addr, err := net.ResolveTCPAddr("tcp", tc.addr)
		if err != nil {
			t.Fatal(err)
		}
		got := ClientURLs("http", addr)
		if name == "" && len(tc.want) > 1 {
			tc.want = tc.want[:1]
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q; want %q", tc.addr, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %q; want %q", tc.addr, got, tc.want)
			}
		}
	}
}

// The first URL of a real wildcard listener is one a client connects to,
// for an IPv4, a dual-stack and an IPv6-only listener.
func TestClientURLsOfAWildcardListenerConnect(t *testing.T) {
	for _, tc := range []struct{ network, addr string }{
		{"tcp", "0.0.0.0:0"},
		{"tcp", "[::]:0"},
		{"tcp6", "[::]:0"},
	} {
		ln, err := net.Listen(tc.network, tc.addr)
		if err != nil {
			t.Logf("%s %s: %v (no such listener here)", tc.network, tc.addr, err)
			continue
		}
		u, err := url.Parse(ClientURLs("http", ln.Addr())[0])
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Errorf("%s %s (%s): dialling %s: %v", tc.network, tc.addr, ln.Addr(), u.Host, err)
		} else {
			c.Close()
		}
		ln.Close()
	}
}
