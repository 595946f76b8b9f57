package kubernetes

import "sync"

// Pods per partition. A pod's container is one PID namespace, shared by
// everything that runs in it: a command sees its neighbours' processes in
// ps and /proc and can signal them. So requests of different partitions
// (pluginapi.ExecRequest's Partition: an MCP session over HTTP) run in
// pods of their own, keyed by (mode, partition), labelled with the
// partition, and ClosePartition deletes a partition's pods
// (remoteexec.Modes does both). With podPerSession off, every partition
// shares one pod per mode, as one client's calls do; an attached pod is
// shared by every partition whatever the settings.

// labelPartition names the partition a created pod serves.
const labelPartition = "dsh-host.dev/partition"

// DefaultMaxSessions bounds the partitions that have pods at once, by
// default: mcp.maxSessions' default (64), and as many again for closed
// sessions whose jobs are in their grace.
const DefaultMaxSessions = 128

// Partitioning are the settings of pods per partition.
type Partitioning struct {
	// PodPerSession gives each partition (session) pods of its own;
	// nil: on.
	PodPerSession *bool `json:"podPerSession,omitempty"`
	// MaxSessions bounds the partitions with pods at once: a request of
	// another partition is refused, naming the key. 0: DefaultMaxSessions.
	MaxSessions int `json:"maxSessions,omitempty"`
}

const partitionSchema = `,
    "podPerSession": {"type": "boolean", "default": true, "description": "each session (the host's partition: an MCP session over HTTP) gets pods of its own, so that sessions do not see or signal each other's processes; off: sessions share one pod per mode (an attached pod is always shared)"},
    "maxSessions": {"type": "integer", "minimum": 0, "default": 128, "description": "sessions with pods of their own at once; a request of another is refused (0: the default)"}`

// partitions says whether the settings s give each partition pods of its
// own, and how many partitions may have them at once.
func partitions(s Settings) (perPartition bool, max int) {
	max = s.MaxSessions
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return !s.attaching() && (s.PodPerSession == nil || *s.PodPerSession), max
}

// sweptSet are the namespaces (of clusters) a sweep of dead plugins' pods
// ran in, shared by an executor's targets: one sweep per namespace, not
// one per session.
type sweptSet struct {
	mu sync.Mutex
	m  map[string]bool
}

// first marks key swept and reports whether it was not yet.
func (s *sweptSet) first(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[key] {
		return false
	}
	if s.m == nil {
		s.m = map[string]bool{}
	}
	s.m[key] = true
	return true
}
