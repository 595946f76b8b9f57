package pluginapitest_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
)

// Launch starts the plugin as dsh-host does: the keys of the connection are
// the host's, handed on the TLSFDVar pipe, not go-plugin's AutoMTLS (which
// hands the plugin PLUGIN_CLIENT_CERT in its environment).
func TestLaunchHandsTheKeysAsDshHostDoes(t *testing.T) {
	_, pid := pluginapitest.LaunchPID(t, pluginCmd())
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)) // as it started
	if err != nil {
		t.Fatal(err)
	}
	env := "\x00" + string(environ)
	if !strings.Contains(env, "\x00"+pluginapi.TLSFDVar+"=") {
		t.Errorf("the plugin was not handed its keys on %s: %q", pluginapi.TLSFDVar, environ)
	}
	if strings.Contains(env, "\x00PLUGIN_CLIENT_CERT=") {
		t.Errorf("the plugin was launched with go-plugin's AutoMTLS: %q", environ)
	}
}

// fatalTB records the first Fatalf and ends the goroutine, as t.Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A plugin that writes to stdout before Serve is told so, not go-plugin's
// guess that it was not compiled for this architecture.
func TestLaunchSaysAPluginWroteToStdoutBeforeServe(t *testing.T) {
	cmd := pluginCmd()
	cmd.Env = []string{serveVar + "=noisy"}
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pluginapitest.Launch(f, cmd)
	}()
	<-done
	for _, want := range []string{`wrote "hello from a library's init" to its stdout before its handshake`, "before pluginapi.Serve"} {
		if !strings.Contains(f.msg, want) {
			t.Errorf("Launch of a plugin that prints first: %q, want %q", f.msg, want)
		}
	}
	if strings.Contains(f.msg, "architecture") {
		t.Errorf("Launch still blames the architecture: %q", f.msg)
	}
}
