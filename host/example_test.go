package host_test

import (
	"context"
	"fmt"
	"os"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// Launch one executor plugin and run a command through it.
func ExampleLaunch() {
	ctx := context.Background()
	// pluginBin is a built dsh-executor-bash-local; a dsh-host binary can
	// serve its built-in executors too: host.BuiltinExecutor("bash-local").
	h, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: pluginBin}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close(ctx)
	res, err := pluginapi.RunRequest(ctx, h.Shell(), pluginapi.ExecRequest{Command: "echo hello; exit 3"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(pluginapi.Render(res.Stdout.Text, res.ExitStatus()))
	// Output:
	// hello
	//
	// [exit code: 3]
}

// A runtime keeps an executor mounted across reloads, and runs jobs.
func ExampleRuntime() {
	ctx := context.Background()
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{
		Options: host.Options{Executor: host.Executor{Name: "bash-local", Path: pluginBin}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close(ctx)

	job, err := r.Jobs().Start(ctx, "agent-1", pluginapi.ExecRequest{Command: "echo from a job"})
	if err != nil {
		fmt.Println(err)
		return
	}
	done, _ := r.Jobs().Wait(ctx, "agent-1", job.ID)
	out, _, _ := r.Jobs().Output(ctx, "agent-1", job.ID)
	fmt.Print(done.State, ": ", out.Delta)

	if err := r.Reload(ctx); err != nil { // a new plugin process, same executor
		fmt.Println(err)
		return
	}
	gen, _ := r.Generation()
	res, _ := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{Command: "echo after the reload"}, nil)
	fmt.Print("generation ", gen, ": ", res.Stdout.Text)
	// Output:
	// exited: from a job
	// generation 2: after the reload
}

// A sandboxing executor takes its policy typed: here one more writable
// root, beside the workdir.
func ExampleOptions_sandboxPolicy() {
	ctx := context.Background()
	data, _ := os.MkdirTemp("", "data-")
	defer os.RemoveAll(data)
	// sandboxBin is a built dsh-executor-bash-sandbox (or
	// host.BuiltinExecutor("bash-sandbox")).
	r, err := host.StartRuntime(ctx, host.RuntimeOptions{Options: host.Options{
		Executor:      host.Executor{Name: "bash-sandbox", Path: sandboxBin},
		SandboxPolicy: &pluginapi.SandboxPolicy{WritableRoots: []string{data}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close(ctx)
	res, err := pluginapi.RunRequest(ctx, r.Shell(), pluginapi.ExecRequest{
		Command: "echo kept > " + data + "/out && cat " + data + "/out; echo no > /etc/dsh-example || echo /etc is read-only",
	}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(res.Stdout.Text)
	// Output:
	// kept
	// /etc is read-only
}
