package container_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/container"
)

// A container removed from outside while a command runs in it: the run
// fails at once as an executor that is gone does, saying where it ran,
// and the next call gets a new container.
func TestAContainerKilledFromOutside(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			x := newExecutor(t, addr, nil)
			ctx := t.Context()
			ran := make(chan error, 1)
			go func() {
				_, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "sleep 100"}, nil)
				ran <- err
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
			case err := <-ran:
				if !errors.Is(err, pluginapi.ErrPluginUnavailable) || !strings.Contains(err.Error(), "container "+id[:12]) {
					t.Errorf("the run in a container removed from outside ended with %v; want ErrPluginUnavailable naming container %s", err, id[:12])
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
