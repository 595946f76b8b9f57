package container_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/container"
)

// The engines under test: Docker Engine API addresses, from the
// environment (.ci/run starts dockerd and podman's service and sets them).
var engines = map[string]string{
	"docker": os.Getenv("DSH_TEST_DOCKER_HOST"),
	"podman": os.Getenv("DSH_TEST_PODMAN_HOST"),
}

// image is the image the tests run commands in (.ci/run builds it from
// Debian's busybox-static and bash-static, with no registry).
var image = cmp.Or(os.Getenv("DSH_TEST_IMAGE"), "dsh-test:local")

// agent is dsh-agent, built static by TestMain; plugin is the executor's
// plugin binary.
var agent, pluginBin string

func TestMain(m *testing.M) {
	dir, err := pluginapitest.BuildDir("dsh-container-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agent = filepath.Join(dir, "dsh-agent")
	pluginBin = filepath.Join(dir, "dsh-executor-container")
	for out, pkg := range map[string]string{
		agent:     "github.com/dsh-host/dsh-host/cmd/dsh-agent",
		pluginBin: "github.com/dsh-host/dsh-host/plugins/container/cmd/dsh-executor-container",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", pkg+":", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// engine is the address of the named engine, skipping the test where it
// is not running (failing it under CI=true, where .ci/run starts it).
func engine(t *testing.T, name string) string {
	t.Helper()
	addr := engines[name]
	if addr == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: DSH_TEST_%s_HOST is not set; under CI=true .ci/run starts the engine and sets it", name, strings.ToUpper(name))
		}
		t.Skipf("%s: no engine (set DSH_TEST_%s_HOST to its API address, and build %s: see .ci/run)", name, strings.ToUpper(name), image)
	}
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Ping(t.Context(), client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		t.Fatalf("%s at %s does not answer: %v", name, addr, err)
	}
	return addr
}

// settings is the executor's section for an engine, plus extra keys.
func settings(t *testing.T, addr string, extra map[string]any) []byte {
	t.Helper()
	m := map[string]any{"engine": addr, "image": image, "agent": agent}
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newExecutor is a configured container executor, closed (and its
// container checked gone) when the test ends.
func newExecutor(t *testing.T, addr string, extra map[string]any) pluginapi.ShellExecutor {
	t.Helper()
	x := container.New()
	if err := x.Configure(t.Context(), settings(t, addr, extra)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = x.Close(ctx)
		requireNoContainers(t, addr)
	})
	return x
}

// requireNoContainers fails the test if a container this process's
// executors made is still there a few seconds after they closed.
func requireNoContainers(t *testing.T, addr string) {
	t.Helper()
	requireNoContainersOf(t, addr, container.PluginLabel(), 10*time.Second)
}

// requireNoContainersOf fails the test if a container labelled as made by
// the plugin process label names is still there after within.
func requireNoContainersOf(t *testing.T, addr, label string, within time.Duration) {
	t.Helper()
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		list, err := c.ContainerList(context.Background(), client.ContainerListOptions{
			All: true, Filters: client.Filters{}.Add("label", "dev.dsh-host.plugin="+label),
		})
		if err != nil {
			t.Fatalf("listing containers: %v", err)
		}
		if len(list.Items) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, s := range list.Items {
				_, _ = c.ContainerRemove(context.Background(), s.ID, client.ContainerRemoveOptions{Force: true})
			}
			t.Fatalf("%d containers of the executor were left %s after it ended (removed now): %v", len(list.Items), within, list.Items[0].ID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The suite passes with the commands in a container, on each engine, as
// root (a root-owned workspace) and as another user (the workspace's
// owner, 65534). A directory of the test's is the workspace, and its
// TMPDIR, so that the cases' workdirs are in the container too; the
// container's /tmp, where the agent spills, is its own (a spill file the
// suite read from this machine's file system would not be found), and the
// variables the suite sets are forwarded.
func TestConformanceInAContainer(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		for _, owner := range []int{0, 65534} {
			t.Run(name+"/uid "+strconv.Itoa(owner), func(t *testing.T) {
				addr := engine(t, name)
				workspace, err := os.MkdirTemp("", "dsh-container-workspace-")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(workspace)
				if err := os.Chmod(workspace, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chown(workspace, owner, owner); err != nil {
					t.Fatal(err)
				}
				t.Setenv("TMPDIR", workspace)
				base := settings(t, addr, map[string]any{"workspace": workspace, "forwardEnv": pluginapitest.InheritedNames()})
				pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
					t.Cleanup(func() { requireNoContainers(t, addr) })
					return container.New()
				}, pluginapitest.Options{Settings: string(base)})
			})
		}
	}
}
