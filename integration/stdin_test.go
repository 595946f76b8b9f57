package integration

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A command reads /dev/null, not dsh-host's stdin: here that stdin is a
// pipe the test keeps open, with a line in it, as an agent host's or a
// shell pipeline's would be. `cat` must see end of file at once, read
// nothing of the line, and the run end long before its timeout, the pipe
// still open. Were the command to inherit the pipe, cat would print the
// line and then wait for more until the timeout killed it.
func TestRunCommandStdinIsDevNullNotTheHosts(t *testing.T) {
	const line = "from dsh-host's stdin\n"
	for _, tc := range localExecutors() {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close() // only once dsh-host has exited
			if _, err := w.WriteString(line); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"run", "--timeout", "15s", "--workdir", t.TempDir()}, tc.args...)
			p := command(t, scenario(t), append(args, "--", "cat; echo end")...)
			p.cmd.Stdin = r // an *os.File: dsh-host gets the pipe itself as fd 0
			p.start(t)
			r.Close() // dsh-host holds it; w stays open here
			res := p.wait(t)
			if res.code != 0 || res.stdout != "end\n" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 0 and only %q: the command read dsh-host's stdin", res.code, res.stdout, res.stderr, "end\n")
			}
			if res.elapsed > 10*time.Second {
				t.Errorf("the run took %s: cat waited on dsh-host's open stdin instead of reading /dev/null", res.elapsed)
			}
			if strings.Contains(res.stdout, strings.TrimSuffix(line, "\n")) {
				t.Errorf("the command read the line written to dsh-host's stdin")
			}
		})
	}
}

// Under dsh-host mcp, its stdin is the protocol itself, held open by the
// client: a command that inherited it would read the client's messages.
// `cat` sees end of file at once, the call answers long before its timeout,
// and the session goes on.
func TestMCPCommandStdinIsDevNullNotTheProtocol(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	began := time.Now()
	text, isErr := call(t, cs, "bash", map[string]any{"command": "cat; echo end", "timeout": 15000})
	if took := time.Since(began); isErr || text != "end" || took > 10*time.Second {
		t.Errorf("bash %q: %q (error %v) after %s; want only %q at once: the command read dsh-host mcp's stdin", "cat; echo end", text, isErr, took, "end")
	}
	if text, isErr := call(t, cs, "bash", map[string]any{"command": "echo still serving"}); isErr || text != "still serving" {
		t.Errorf("the next call: %q (error %v)", text, isErr)
	}
}

// Nor does the plugin hold the protocol: go-plugin hands the plugin its
// host's stdin, which under dsh-host mcp is the client's pipe, so a plugin
// (or anything it starts other than a command) that read its stdin would
// take the client's messages. pluginapi.Serve puts /dev/null there first.
func TestMCPPluginStdinIsDevNullNotTheProtocol(t *testing.T) {
	cs := mcpSession(t, scenario(t))
	// The command's parent is the plugin (bash-local, built in).
	text, isErr := call(t, cs, "bash", map[string]any{"command": `readlink /proc/$PPID/fd/0`})
	if isErr || text != "/dev/null" {
		t.Errorf("the plugin's stdin is %q (error %v), want /dev/null: it holds dsh-host mcp's protocol pipe", text, isErr)
	}
}
