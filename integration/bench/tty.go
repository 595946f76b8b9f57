package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ttyPrompt is the terminal job whose start the tty figures time: a
// prompt of bash's read, "$ ".
const ttyPrompt = "read -p '$ ' x"

// ttyShell is the terminal job the tty figures drive: an interactive bash
// that reads no startup file, at a prompt of "$ ".
const ttyShell = "PS1='$ ' bash --norc --noprofile -i"

var benchJobID = regexp.MustCompile(`job-\d+`)

// ttyLatency measures terminal jobs through `dsh-host mcp` (one warm
// stdio session, bash-local), against a bash tool call of `true` through
// the same server, and a keystroke against tmux's on the same machine:
//   - tty_keystroke_echo_vs_bash_true: job_input "x" to an interactive
//     bash until its echo is back;
//   - tty_keystroke_vs_tmux: the same against tmux send-keys, then
//     capture-pane until the screen shows it;
//   - tty_job_start_vs_bash_true: bash with tty starting a read until
//     its prompt is back (and, for information, an interactive bash).
func ttyLatency(ctx context.Context, bin string, n, warmup int) (figs []figure, err error) {
	c, err := connectTTY(ctx, exec.Command(bin, "mcp"))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := c.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	echoes, err := c.echoes(n, warmup)
	if err != nil {
		return nil, err
	}
	var tmuxEcho []float64
	if _, err := exec.LookPath("tmux"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: no tmux, so no tty_keystroke_vs_tmux")
	} else if tmuxEcho, err = tmuxKeystroke(n, warmup); err != nil {
		return nil, err
	}
	// A terminal job at the prompt of a read, and an interactive bash
	// (whose own start, readline and job control, is most of it).
	starts, trues, err := ttyStarts(c.tool, c.bashTrue, ttyPrompt, n, warmup)
	if err != nil {
		return nil, err
	}
	shells, shellTrues, err := ttyStarts(c.tool, c.bashTrue, ttyShell, n, warmup)
	if err != nil {
		return nil, err
	}
	keystroke := median(echoes[0])
	figs = []figure{
		{"tty_keystroke_echo_vs_bash_true", keystroke / median(echoes[1]), "x", "<=", 1.5},
		{"tty_job_start_vs_bash_true", median(starts) / median(trues), "x", "<=", 2},
		{"tty_keystroke_echo_median", keystroke, "ms", ">=", 0},
		{"tty_job_start_median", median(starts), "ms", ">=", 0},
		{"tty_interactive_bash_start_vs_bash_true", median(shells) / median(shellTrues), "x", ">=", 0},
	}
	if tmuxEcho != nil {
		figs = append(figs, figure{"tty_keystroke_vs_tmux", keystroke / median(tmuxEcho), "x", "<=", 1},
			figure{"tty_keystroke_tmux_median", median(tmuxEcho), "ms", ">=", 0})
	}
	return figs, nil
}

// ttyKeystrokeVia is tty_keystroke_echo_vs_bash_true through `dsh-host
// mcp` on another executor (its plugin in bin's plugins directory, shell
// its settings section): a keystroke's echo against that executor's own
// bash tool call of `true`, as tty_keystroke_echo_vs_bash_true_EXECUTOR.
func ttyKeystrokeVia(ctx context.Context, bin, executor string, shell map[string]any, n, warmup int) (figs []figure, err error) {
	f, err := os.CreateTemp("", "dsh-bench-settings-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	err = json.NewEncoder(f).Encode(map[string]any{"shell": shell})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	c, err := connectTTY(ctx, exec.Command(bin, "mcp", "--plugin-dir", filepath.Join(filepath.Dir(bin), "plugins"),
		"--executor", executor, "--settings", f.Name()))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := c.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	echoes, err := c.echoes(n, warmup)
	if err != nil {
		return nil, err
	}
	keystroke := median(echoes[0])
	return []figure{
		{"tty_keystroke_echo_vs_bash_true_" + executor, keystroke / median(echoes[1]), "x", "<=", 1.5},
		{"tty_keystroke_echo_median_" + executor, keystroke, "ms", ">=", 0},
	}, nil
}

// ttyClient is one stdio session with `dsh-host mcp`.
type ttyClient struct {
	ctx     context.Context
	session *mcp.ClientSession
}

// connectTTY starts cmd, a `dsh-host mcp`, and connects to it.
func connectTTY(ctx context.Context, cmd *exec.Cmd) (*ttyClient, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-bench", Version: "0.1.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to dsh-host mcp: %w", err)
	}
	return &ttyClient{ctx: ctx, session: session}, nil
}

func (c *ttyClient) close() error {
	if err := c.session.Close(); err != nil {
		return fmt.Errorf("closing the MCP session: %w", err)
	}
	return nil
}

// tool calls a tool, and returns its text; a tool's error result is an
// error.
func (c *ttyClient) tool(name string, args map[string]any) (string, error) {
	res, err := c.session.CallTool(c.ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return "", fmt.Errorf("%s: %s", name, b.String())
	}
	return b.String(), nil
}

// bashTrue is a bash tool call of `true`.
func (c *ttyClient) bashTrue() error {
	text, err := c.tool("bash", map[string]any{"command": "true"})
	if err == nil && text != "" {
		err = fmt.Errorf("bash true gave %q", text)
	}
	return err
}

// echoes times job_input "x" to an interactive bash until its echo is
// back, interleaved with bashTrue: the times of each, in that order.
func (c *ttyClient) echoes(n, warmup int) ([][]float64, error) {
	started, err := c.tool("bash", map[string]any{"command": ttyShell, "tty": true, "yield_ms": 5000})
	if err != nil {
		return nil, err
	}
	id := benchJobID.FindString(started)
	if id == "" || !strings.Contains(started, "$ ") {
		return nil, fmt.Errorf("the terminal job did not show its prompt: %q", started)
	}
	typed := 0
	echo := func() error {
		if typed++; typed%60 == 0 {
			// A fresh line now and then, unmeasured by the echo's
			// check: the line stays short.
			if _, err := c.tool("job_input", map[string]any{"job_id": id, "text": "<C-u>", "yield_ms": 1000}); err != nil {
				return err
			}
		}
		text, err := c.tool("job_input", map[string]any{"job_id": id, "text": "x", "yield_ms": 1000})
		for deadline := time.Now().Add(5 * time.Second); err == nil && !strings.Contains(text, "x"); {
			if time.Now().After(deadline) {
				return fmt.Errorf("the echo of x never came: %q", text)
			}
			text, err = c.tool("job_output", map[string]any{"job_id": id, "screen": true})
		}
		return err
	}
	echoes, err := interleave(n, warmup, echo, c.bashTrue)
	if err != nil {
		return nil, err
	}
	if _, err := c.tool("job_kill", map[string]any{"job_id": id}); err != nil {
		return nil, err
	}
	return echoes, nil
}

// tmuxKeystroke times tmux's round trip of a keystroke to the same
// interactive bash: send-keys x, then capture-pane until the pane shows
// one more x.
func tmuxKeystroke(n, warmup int) ([]float64, error) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return nil, fmt.Errorf("tmux_keystroke needs tmux: %w", err)
	}
	sock := "dsh-bench-" + strconv.Itoa(os.Getpid())
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tmux, append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := run("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "80", "-y", "24", ttyShell); err != nil {
		return nil, err
	}
	defer func() { _, _ = run("kill-server") }()
	count := func() (int, error) {
		out, err := run("capture-pane", "-p", "-t", "b")
		return strings.Count(out, "x"), err
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, err := run("capture-pane", "-p", "-t", "b")
		if err != nil {
			return nil, err
		}
		if strings.Contains(out, "$") {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("tmux's bash showed no prompt: %q", out)
		}
	}
	var times []float64
	for i := range warmup + n {
		if i%60 == 59 {
			if _, err := run("send-keys", "-t", "b", "C-u"); err != nil {
				return nil, err
			}
			time.Sleep(20 * time.Millisecond)
		}
		before, err := count()
		if err != nil {
			return nil, err
		}
		began := time.Now()
		if _, err := run("send-keys", "-t", "b", "x"); err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(5 * time.Second); ; {
			now, err := count()
			if err != nil {
				return nil, err
			}
			if now > before {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("tmux never showed the x")
			}
		}
		if i >= warmup {
			times = append(times, float64(time.Since(began))/float64(time.Millisecond))
		}
	}
	return times, nil
}

// ttyStarts times bash with tty starting command until its prompt ("$ ")
// is back, interleaved with bashTrue; killing the job is part of an
// iteration, not of its time.
func ttyStarts(tool func(string, map[string]any) (string, error), bashTrue func() error, command string, n, warmup int) (starts, trues []float64, err error) {
	for i := range warmup/2 + n/2 {
		for j := range 2 {
			began := time.Now()
			if (i+j)%2 == 0 {
				text, err := tool("bash", map[string]any{"command": command, "tty": true, "yield_ms": 5000})
				took := time.Since(began)
				if err != nil {
					return nil, nil, err
				}
				if !strings.Contains(text, "$ ") {
					return nil, nil, fmt.Errorf("%s showed no prompt: %q", command, text)
				}
				if i >= warmup/2 {
					starts = append(starts, float64(took)/float64(time.Millisecond))
				}
				if _, err := tool("job_kill", map[string]any{"job_id": benchJobID.FindString(text)}); err != nil {
					return nil, nil, err
				}
				continue
			}
			if err := bashTrue(); err != nil {
				return nil, nil, err
			}
			if i >= warmup/2 {
				trues = append(trues, float64(time.Since(began))/float64(time.Millisecond))
			}
		}
	}
	return starts, trues, nil
}
