package container_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// imageWithEntrypoint commits the test image as a new one whose
// ENTRYPOINT is entrypoint (JSON), removed when the test ends.
func imageWithEntrypoint(t *testing.T, addr, entrypoint string) string {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(client.WithHost(addr), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	created, err := c.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: image, Cmd: []string{"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	ref := fmt.Sprintf("dsh-test-entrypoint-%d:local", time.Now().UnixNano()) // no two tests' at once on one engine
	if _, err := c.ContainerCommit(ctx, created.ID, client.ContainerCommitOptions{Reference: ref, Config: &container.Config{}, Changes: []string{"ENTRYPOINT " + entrypoint}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true}) })
	return ref
}

// An image's ENTRYPOINT does not stand in the agent's way: one that
// ignores its arguments and prints (as a service's image might) does not
// run, and commands do.
func TestAnImagesEntrypointDoesNotRun(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ref := imageWithEntrypoint(t, addr, `["/bin/sh", "-c", "echo I ignore my arguments; exit 3"]`)
			x := newExecutor(t, addr, map[string]any{"image": ref})
			if got := run(t, x, "", "echo served").Stdout.Text; got != "served\n" {
				t.Errorf("the command printed %q", got)
			}
		})
	}
}
