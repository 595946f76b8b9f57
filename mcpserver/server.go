// Package mcpserver is dsh-host's MCP server, for a host.Runtime: the bash
// tool and the job tools (job_output, job_kill, jobs, and job_input for
// terminal jobs where the executor offers terminals), with escalations
// approved through elicitation, progress notifications that carry a
// command's recent output, and completion notices of background jobs. It
// adds its tools to a go-sdk mcp.Server, so it serves over any of the
// SDK's transports (stdio, streamable HTTP), and a Go agent host can add
// them to a server of its own.
package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// StdioOwner owns the jobs of a server's every session when Options.Owner
// is nil: a stdio server has one client.
const StdioOwner = "mcp"

// Long-polls of job_output wait at most this long.
const (
	maxWaitMs     = 30_000
	jobPollPeriod = 100 * time.Millisecond
)

// Options adjust the tools.
type Options struct {
	// Policy decides escalations (require_escalated), before the client's
	// user is asked.
	Policy host.ApprovalPolicy
	// Workdir, when set, is where every command runs (an absolute path);
	// empty: the executor's default.
	Workdir string
	// Owner names the owner of a session's jobs: only it can read, list
	// and kill them, and only its sessions hear of their end. nil: one
	// owner, StdioOwner, for every session.
	Owner func(*mcp.ServerSession) string
	// MaxRunningJobs bounds an owner's running background jobs, and
	// MaxAllRunningJobs those of every owner together (a closed session's
	// jobs still run through their grace); zero: no bound.
	MaxRunningJobs    int
	MaxAllRunningJobs int
	// MaxRunningCalls bounds an owner's foreground bash calls at once;
	// zero: no bound.
	MaxRunningCalls int
	// Logger gets what the tools cannot tell a client (a notice dropped);
	// nil: none.
	Logger hclog.Logger
}

// Tools are the tools over one runtime's executor and jobs.
type Tools struct {
	tool      *host.BashTool
	shell     pluginapi.ShellExecutor
	jobs      *host.Jobs
	approvals *approvals
	owner     func(*mcp.ServerSession) string
	maxJobs   int
	maxAll    int
	// starting makes a background start and the count before it one
	// step: calls run concurrently.
	starting sync.Mutex
	// calls are the foreground bash calls running, by owner.
	calls  *runningCalls
	logger hclog.Logger
}

// New returns the tools over r. It asks r's executor whether it sandboxes,
// which, with opts.Policy, decides whether the bash tool offers
// sandbox_permissions.
func New(ctx context.Context, r *host.Runtime, opts Options) (*Tools, error) {
	tool, err := host.NewBashTool(ctx, r.Shell(), r.Jobs(), opts.Policy)
	if err != nil {
		return nil, err
	}
	tool.Workdir = opts.Workdir
	t := &Tools{tool: tool, shell: r.Shell(), jobs: r.Jobs(), approvals: newApprovals(opts.Policy), owner: opts.Owner, maxJobs: opts.MaxRunningJobs, maxAll: opts.MaxAllRunningJobs, calls: newRunningCalls(opts.MaxRunningCalls), logger: opts.Logger}
	if t.owner == nil {
		t.owner = func(*mcp.ServerSession) string { return StdioOwner }
	}
	if t.logger == nil {
		t.logger = hclog.NewNullLogger()
	}
	return t, nil
}
