package container

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// Containers per partition. A container's PID namespace is shared by
// everything that runs in it: a command sees its neighbours' processes in
// ps and /proc (their environment, their open spill files) and can signal
// them. So requests of different partitions (pluginapi.ExecRequest's
// Partition: an MCP session over HTTP) run in containers of their own,
// keyed by (mode, partition), and ClosePartition removes a partition's
// containers. With containerPerSession off, every partition shares one
// container per mode, as one client's calls do.

// labelPartition names the partition a container serves.
const labelPartition = "dev.dsh-host.partition"

// DefaultMaxSessions bounds the partitions that have containers at once,
// by default: mcp.maxSessions' default (64), and as many again for closed
// sessions whose jobs are in their grace.
const DefaultMaxSessions = 128

// Partitioning are the settings of containers per partition.
type Partitioning struct {
	// ContainerPerSession gives each partition (session) containers of
	// its own; nil: on.
	ContainerPerSession *bool `json:"containerPerSession,omitempty"`
	// MaxSessions bounds the partitions with containers at once: a
	// request of another partition is refused, naming the key. 0:
	// DefaultMaxSessions.
	MaxSessions int `json:"maxSessions,omitempty"`
}

const partitionSchema = `,
    "containerPerSession": {"type": "boolean", "default": true, "description": "each session (the host's partition: an MCP session over HTTP) gets containers of its own, so that sessions do not see or signal each other's processes; off: sessions share one container per mode"},
    "maxSessions": {"type": "integer", "minimum": 0, "default": 128, "description": "sessions with containers of their own at once; a request of another is refused (0: the default)"}`

func (p Partitioning) perSession() bool {
	return p.ContainerPerSession == nil || *p.ContainerPerSession
}

func (p Partitioning) maxSessions() int {
	if p.MaxSessions <= 0 {
		return DefaultMaxSessions
	}
	return p.MaxSessions
}

// modeKey names a container: its mode and the partition it serves ("" for
// every partition when containers are not per session).
type modeKey struct {
	mode      pluginapi.SandboxMode
	partition string
}

var _ pluginapi.PartitionCloser = (*Executor)(nil)

// keyFor is the container a request of mode and partition runs in, and an
// error when it would be a new partition's past the bound. e.mu is held.
func (e *Executor) keyFor(mode pluginapi.SandboxMode, partition string) (modeKey, error) {
	if !e.part.perSession() {
		return modeKey{mode: mode}, nil
	}
	k := modeKey{mode: mode, partition: partition}
	if e.byMode[k] != nil {
		return k, nil
	}
	live := map[string]bool{}
	for have := range e.byMode {
		live[have.partition] = true
	}
	if !live[partition] && len(live) >= e.part.maxSessions() {
		return k, fmt.Errorf("%w: the container executor holds containers for %d sessions, its limit (shell.maxSessions): wait for a session to end", pluginapi.ErrInvalidRequest, len(live))
	}
	return k, nil
}

// ClosePartition removes partition's containers: what runs there is
// killed first. With containerPerSession off the shared containers (those
// of partition "") are every partition's, and stay.
func (e *Executor) ClosePartition(ctx context.Context, partition string) error {
	e.mu.Lock()
	if !e.part.perSession() && partition == "" {
		e.mu.Unlock()
		return nil
	}
	var execs []*modeExecutor
	for k, x := range e.byMode {
		if k.partition == partition {
			execs = append(execs, x)
			delete(e.byMode, k)
		}
	}
	e.mu.Unlock()
	var errs []error
	for _, x := range execs {
		errs = append(errs, x.Close(ctx))
	}
	return errors.Join(errs...)
}

// process is a background process of one of the containers, under an id
// unique among them all: each container's agent numbers its processes
// from the same start, so two containers' (two partitions', two modes', a
// container and its replacement) would otherwise collide.
type process struct {
	pluginapi.ShellProcess
	id string
}

var (
	_ pluginapi.Releaser   = (*process)(nil)
	_ pluginapi.SpillNamer = (*process)(nil)
)

// named gives a process started in a container its executor-wide id.
func (e *Executor) named(p pluginapi.ShellProcess, err error) (pluginapi.ShellProcess, error) {
	if err != nil {
		return nil, err
	}
	return &process{ShellProcess: p, id: "c" + strconv.FormatUint(e.started.Add(1), 10) + "-" + p.ID()}, nil
}

func (p *process) ID() string { return p.id }

func (p *process) Release(ctx context.Context) error {
	if r, ok := p.ShellProcess.(pluginapi.Releaser); ok {
		return r.Release(ctx)
	}
	return nil
}

func (p *process) SpillPaths() (stdout, stderr string) {
	if n, ok := p.ShellProcess.(pluginapi.SpillNamer); ok {
		return n.SpillPaths()
	}
	return "", ""
}
