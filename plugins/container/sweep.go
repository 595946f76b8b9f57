package container

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/moby/moby/client"

	"github.com/dsh-host/dsh-host/internal/hostid"
	"github.com/dsh-host/dsh-host/internal/ownedtemp"
	"github.com/dsh-host/dsh-host/internal/procstat"
)

// procStat is a process's /proc stat fields from the state on, or nil:
// the side stream's peer check reads it.
func procStat(pid int) []string {
	info, ok := procstat.Read(pid)
	if !ok {
		return nil
	}
	return []string{info.State, strconv.Itoa(info.PPID), strconv.Itoa(info.PGRP)}
}

// sweep removes the containers this executor made on this machine whose
// plugin is dead (a plugin SIGKILLed before it could remove its own, its
// container kept by an engine that missed the stream's end).
func sweep(ctx context.Context, c *client.Client) {
	list, err := c.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: client.Filters{}.Add("label", labelExecutor+"="+Name, labelMachine+"="+hostid.MachineID()),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "container: sweeping leftover containers: %v\n", err)
		return
	}
	for _, s := range list.Items {
		if hostid.Alive(s.Labels[labelPlugin]) {
			continue
		}
		if _, err := c.ContainerRemove(ctx, s.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !isGone(err) {
			fmt.Fprintf(os.Stderr, "container: removing leftover %s of a dead plugin: %v\n", short(s.ID), err)
		}
	}
}

// sweepSideDirs removes the side streams' directories (see sidestream.go)
// of dead plugins of this machine: a plugin SIGKILLed while it waited for
// its agent's connection leaves one.
func sweepSideDirs() { ownedtemp.Sweep(sidePrefix) }
