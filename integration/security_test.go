package integration

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	shellexecv1 "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
)

// A plugin binary started without the host's handshake cookie serves
// nothing: it says what it is and exits.
func TestPluginRefusesWithoutTheCookie(t *testing.T) {
	cmd := exec.Command(bins.plugin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), tagVar + "=" + scenario(t)}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "plugin") {
		t.Errorf("exit %v, output %q: want a refusal that says it is a plugin", err, out)
	}
}

// listeningSockets are the paths of the Unix sockets process pid listens
// on.
func listeningSockets(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if ino, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path; St 01 is listening.
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && fields[5] == "01" && inodes[fields[6]] {
			paths = append(paths, fields[7])
		}
	}
	return paths
}

// The plugin's socket serves only the host that launched it: a client
// without the host's certificate (AutoMTLS) gets nothing, in the clear or
// over TLS.
func TestPluginSocketNeedsTheHostsCertificate(t *testing.T) {
	t.Setenv(tagVar, scenario(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: bins.plugin}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	socks := listeningSockets(t, h.PluginPID())
	if len(socks) == 0 {
		t.Fatal("the plugin listens on no Unix socket")
	}
	dir, err := os.Stat(filepath.Dir(socks[0]))
	if err != nil {
		t.Fatal(err)
	}
	if dir.Mode().Perm()&0o077 != 0 {
		t.Errorf("the socket's directory has mode %04o: others can reach it", dir.Mode().Perm())
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"in the clear":             insecure.NewCredentials(),
		"over TLS, no client cert": credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}),
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := grpc.NewClient("unix://"+socks[0], grpc.WithTransportCredentials(creds))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if d, err := shellexecv1.NewShellExecutorClient(conn).Describe(cctx, &shellexecv1.DescribeRequest{}); err == nil {
				t.Errorf("a stranger was answered: %v", d)
			}
		})
	}
	if _, err := h.Shell().Describe(ctx); err != nil {
		t.Errorf("the host itself: %v", err)
	}
}

// A plugin that completes the handshake and then answers nothing does not
// hang its host: the launch fails within its deadline, saying so, and the
// plugin is gone (scenario checks).
func TestLaunchOfAPluginThatHangsAfterTheHandshake(t *testing.T) {
	t.Setenv(tagVar, scenario(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	began := time.Now()
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "hung", Path: bins.hung}})
	if err == nil {
		h.Close(context.Background())
		t.Fatal("a plugin that answers nothing was launched")
	}
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("the launch took %v", took)
	}
	if !strings.Contains(err.Error(), "hung") {
		t.Errorf("the error does not name the executor: %v", err)
	}
	// And through the CLI, whose launch has its own deadline.
	r := dsh(t, scenario(t), "run", "--executor", bins.hung, "--", "true")
	if r.code != 125 || r.elapsed > 60*time.Second {
		t.Errorf("dsh-host run on a hung plugin: exit %d after %v\n%s", r.code, r.elapsed, r.stderr)
	}
}

// A plugin whose socket becomes unreachable (it lives on, but its
// connection to the host is gone) is noticed by the health check, killed
// and replaced; the host keeps serving.
func TestRuntimeReplacesAPluginItCannotReach(t *testing.T) {
	t.Setenv(tagVar, scenario(t))
	mark := filepath.Join(t.TempDir(), "deafen")
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DSH_TEST_DEAFEN", mark)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options:        host.Options{Executor: host.Executor{Name: "deaf", Path: bins.deaf}},
		HealthInterval: 100 * time.Millisecond,
		HealthTimeout:  300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	gen, pid := r.Generation()
	for began := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if n, _ := r.Generation(); n > gen {
			break
		}
		if time.Since(began) > 30*time.Second {
			t.Fatal("the unreachable plugin was not replaced")
		}
	}
	if _, err := os.Stat(mark); err == nil {
		t.Fatal("the plugin never closed its sockets")
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the unreachable plugin %d lives on", pid)
	}
	res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "echo served"}, nil)
	if err != nil || res.Stdout.Text != "served\n" {
		t.Errorf("after the replacement: %+v %v", res, err)
	}
}
