package container_test

import (
	"strings"
	"testing"
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
