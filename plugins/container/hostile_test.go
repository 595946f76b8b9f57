package container_test

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/container"
)

// A container removed from outside while a command runs in it: the run
// settles at once, interrupted, saying where it ran, and the next call
// gets a new container.
func TestAContainerKilledFromOutside(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			x := newExecutor(t, addr, nil)
			ctx := t.Context()
			type outcome struct {
				res pluginapi.RunResult
				err error
			}
			ran := make(chan outcome, 1)
			go func() {
				res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "sleep 100"}, nil)
				ran <- outcome{res, err}
			}()
			c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			id := ""
			for deadline := time.Now().Add(30 * time.Second); id == ""; time.Sleep(50 * time.Millisecond) {
				list, err := c.ContainerList(ctx, client.ContainerListOptions{
					Filters: client.Filters{}.Add("label", "dev.dsh-host.plugin="+container.PluginLabel()),
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(list.Items) == 1 {
					id = list.Items[0].ID
				} else if time.Now().After(deadline) {
					t.Fatalf("no container of the executor's ran within 30s (%d)", len(list.Items))
				}
			}
			time.Sleep(300 * time.Millisecond) // the sleep runs
			if _, err := c.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
				t.Fatal(err)
			}
			select {
			case o := <-ran:
				if o.err != nil || o.res.ExitCode != nil || !strings.Contains(o.res.Interrupted, "container "+id[:12]) {
					t.Errorf("the run in a container removed from outside ended with %+v, %v; want a result interrupted, naming container %s", o.res, o.err, id[:12])
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the run in a container removed from outside was still waiting 20s later")
			}
			res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo back"}, nil)
			if err != nil || res.Stdout.Text != "back\n" {
				t.Errorf("the call after the container was removed: %q, %v; want a new container to run it", res.Stdout.Text, err)
			}
		})
	}
}

// A broken target gives a clear error at the first call, never a hang:
// an engine that is not there, an image that is not loaded, an agent that
// is missing or built for another architecture than the image's.
func TestABrokenTargetIsAClearError(t *testing.T) {
	// An agent for another architecture than the image's (this
	// machine's: the test image is imported here).
	foreign, foreignArch := elf.EM_AARCH64, "arm64"
	if runtime.GOARCH == "arm64" {
		foreign, foreignArch = elf.EM_X86_64, "amd64"
	}
	otherAgent := filepath.Join(t.TempDir(), "dsh-agent")
	if err := os.WriteFile(otherAgent, elfHeader(foreign), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, engine string
		extra        map[string]any
		says         string
	}{
		{"no engine", "unix:///nonexistent/dsh/docker.sock", nil, "does not answer"},
		{"no such image", "docker", map[string]any{"image": "dsh-no-such-image:none"}, "images are not pulled"},
		{"no agent", "docker", map[string]any{"agent": "/nonexistent/dsh-agent"}, "the agent for linux/" + runtime.GOARCH},
		{"an agent for another architecture", "docker", map[string]any{"agent": otherAgent}, "is built for " + foreignArch + ", the image for " + runtime.GOARCH},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var x pluginapi.ShellExecutor
			if c.engine == "docker" {
				x = newExecutor(t, engine(t, "docker"), c.extra)
			} else {
				// No engine: nothing to list afterwards.
				ex := container.New()
				if err := ex.Configure(t.Context(), settings(t, c.engine, c.extra)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = ex.Close(context.Background()) })
				x = ex
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
			if err == nil || !strings.Contains(err.Error(), c.says) || ctx.Err() != nil {
				t.Errorf("a run on a broken target (%s): %v; want an error saying %q, at once", c.name, err, c.says)
			}
		})
	}
}

// elfHeader is the 64-byte header of a little-endian ELF64 executable for
// machine: enough for the architecture check, which reads nothing else.
func elfHeader(machine elf.Machine) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	binary.LittleEndian.PutUint16(h[16:], uint16(elf.ET_EXEC))
	binary.LittleEndian.PutUint16(h[18:], uint16(machine))
	binary.LittleEndian.PutUint32(h[20:], uint32(elf.EV_CURRENT))
	binary.LittleEndian.PutUint16(h[52:], 64) // e_ehsize
	return h
}
