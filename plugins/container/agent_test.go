package container_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// findAgent is shell that sets $a to the agent's pid in the container.
const findAgent = `a=; for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = dsh-agent ] && a=${p#/proc/}; done; `

// The agent is not dumpable: a command of the same user (the image's,
// here root without capabilities, or another) cannot read its memory, its
// environment, or take its descriptors (the stream to the executor)
// through /proc, whose entries for the agent belong to root.
func TestTheAgentIsNotDumpable(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		for _, user := range []string{"", "1000:1000"} {
			t.Run(name+"/user "+user, func(t *testing.T) {
				addr := engine(t, name)
				x := newExecutor(t, addr, map[string]any{"user": user})
				res := run(t, x, "", findAgent+`echo "agent $a uid $(id -u)"; [ -n "$a" ] || exit 3
					for f in /proc/$a/fd/*; do (exec 4<$f) 2>/dev/null && echo "its descriptor $f opens"; done
					ls -l /proc/$a/fd/ 2>/dev/null | grep -q socket && echo its sockets are in reach
					cat /proc/$a/environ >/dev/null 2>&1 && echo its environment is readable
					(exec 3</proc/$a/mem) 2>/dev/null && echo its memory opens
					echo "owner $(stat -c %u /proc/$a/fd)"`)
				out := res.Stdout.Text
				if code(res) != 0 || !strings.HasPrefix(out, "agent ") {
					t.Fatalf("no agent found in the container: %+v", res)
				}
				for _, leak := range []string{"sockets are in reach", "environment is readable", "memory opens", "descriptor"} {
					if strings.Contains(out, leak) {
						t.Errorf("a command of the agent's user: %s\n%s", leak, out)
					}
				}
				if !strings.Contains(out, "owner 0\n") {
					t.Errorf("the agent's /proc entries must belong to root (it is not dumpable):\n%s", out)
				}
			})
		}
	}
}

// An agent beneath the workspace (or a writable root) could be swapped by
// a command, and the next container would run the swapped one: such an
// agent is refused before any container is made, as a plugin binary
// there is, naming where it lies.
func TestAnAgentACommandCouldSwapIsRefused(t *testing.T) {
	for _, name := range []string{"docker", "podman"} {
		t.Run(name, func(t *testing.T) {
			addr := engine(t, name)
			ws, _ := dirs(t)
			tools := filepath.Join(ws, "tools")
			if err := os.Mkdir(tools, 0o755); err != nil {
				t.Fatal(err)
			}
			planted := filepath.Join(tools, "dsh-agent")
			copyFile(t, agent, planted, 0o755)
			extra := map[string]any{"workspace": ws, "agent": planted}
			swap := "printf '#!/bin/sh\\necho swapped > " + ws + "/ran\\n' > " + tools + "/new && chmod 755 " + tools + "/new && mv " + tools + "/new " + planted + " && echo swapped"

			x := newExecutor(t, addr, extra)
			res, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: swap}, nil)
			if err == nil || !strings.Contains(err.Error(), planted) || !strings.Contains(err.Error(), "writable root "+ws) {
				t.Errorf("an agent in the workspace: %q, %v; want a refusal naming it and the workspace", res.Stdout.Text, err)
			}
			if err := x.Close(t.Context()); err != nil {
				t.Fatal(err)
			}
			// The next session, had the swap been made.
			x = newExecutor(t, addr, extra)
			_, _ = pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
			if b, err := os.ReadFile(filepath.Join(ws, "ran")); err == nil {
				t.Errorf("a command swapped the agent, and the next container ran the swapped one: %q", b)
			}
		})
	}
}

// copyFile copies from to to, with mode.
func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}
