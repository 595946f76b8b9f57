package main

import "testing"

// A port alone listens on loopback; every interface must be asked for.
func TestHTTPAddrIsLoopbackUnlessToldOtherwise(t *testing.T) {
	for in, want := range map[string]string{
		"8080": "127.0.0.1:8080", ":8080": "127.0.0.1:8080", "0": "127.0.0.1:0",
		"0.0.0.0:8080": "0.0.0.0:8080", "[::1]:8080": "[::1]:8080", "localhost:9": "localhost:9",
	} {
		if got := httpAddr(in); got != want {
			t.Errorf("httpAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
