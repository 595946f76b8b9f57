package container

// Containers per partition. A container's PID namespace is shared by
// everything that runs in it: a command sees its neighbours' processes in
// ps and /proc (their environment, their open spill files) and can signal
// them. So requests of different partitions (pluginapi.ExecRequest's
// Partition: an MCP session over HTTP) run in containers of their own,
// keyed by (mode, partition), and ClosePartition removes a partition's
// containers (remoteexec.Modes does both). With containerPerSession off,
// every partition shares one container per mode, as one client's calls
// do.

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
