// Command sandbox-stand-in is a test fixture, not an executor to use: it is
// bash-local reporting the workspace-write sandbox mode, so that the bash
// tool offers escalation and the approval path can be driven end to end. It
// confines nothing. Each command sees the mode it was granted in
// $SANDBOX_MODE_GRANTED ("default" unless an escalation was approved).
package main

import (
	"context"

	"github.com/dsh-host/dsh-host/pluginapi"
	bashlocal "github.com/dsh-host/dsh-host/plugins/bash-local"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

type standIn struct {
	pluginapi.ShellExecutor
	live pluginapi.LiveRunner
	conf pluginapi.Configurable
}

func (s standIn) Configure(ctx context.Context, settings []byte) error {
	return s.conf.Configure(ctx, settings)
}

func (s standIn) Describe(ctx context.Context) (pluginapi.Description, error) {
	d, err := s.ShellExecutor.Describe(ctx)
	d.Name = "sandbox-stand-in"
	d.SandboxMode = pluginapi.SandboxWorkspaceWrite
	return d, err
}

func (s standIn) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	granted := "default"
	if req.SandboxMode != pluginapi.SandboxNone {
		granted = string(req.SandboxMode)
	}
	env := map[string]string{"SANDBOX_MODE_GRANTED": granted}
	for k, v := range req.Env {
		env[k] = v
	}
	req.Env, req.SandboxMode = env, pluginapi.SandboxNone
	return s.ShellExecutor.Resolve(ctx, req)
}

func (s standIn) RunLive(ctx context.Context, spec pluginapi.ExecSpec, onOutput func(pluginapi.Stream, []byte)) (pluginapi.RunResult, error) {
	return s.live.RunLive(ctx, spec, onOutput)
}

func main() {
	localexec.ClaimAllChildren()
	x := bashlocal.New()
	pluginapi.Serve(standIn{ShellExecutor: x, live: x, conf: x})
}
