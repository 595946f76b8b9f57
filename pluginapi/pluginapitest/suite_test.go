package pluginapitest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/plugins/localexec"
)

// These tests run the suite over real executors built on localexec: one
// that keeps the contract, served as a plugin by this test binary run
// again; and, in a child run of this test binary, executors that break it,
// to see the suite fail saying what the executor must do and leave nothing
// running.

const (
	// serveVar, set, makes this test binary serve bashExecutor as a plugin.
	serveVar = "PLUGINAPITEST_SELFTEST_SERVE"
	// childVar names the broken setup a child run of this test binary
	// puts under the suite.
	childVar = "PLUGINAPITEST_SELFTEST_CHILD"
	// markVar carries a value of the parent test's into everything a child
	// run starts: what carries it after the child ended was left behind.
	markVar = "PLUGINAPITEST_SELFTEST_MARK"
)

func TestMain(m *testing.M) {
	if v := os.Getenv(serveVar); v != "" {
		if v == "noisy" {
			fmt.Println("hello from a library's init") // what an executor must not do
		}
		localexec.ClaimAllChildren()
		pluginapi.Serve(bashExecutor("bash", nil))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// bashExecutor is a localexec executor running commands as
// `shell pre... bash -c COMMAND` (shell "bash" and no pre: plain bash).
func bashExecutor(shell string, pre []string) pluginapi.ShellExecutor {
	return localexec.New(localexec.Config{
		Name:    "selftest",
		Version: "0.0.1",
		Shell:   shell,
		Argv: func(command string) []string {
			if shell == "bash" {
				return []string{"-c", command}
			}
			return append(append([]string{}, pre...), "bash", "-c", command)
		},
		SettingsSchema: localexec.SettingsSchemaFor("shell (selftest)", ""),
	})
}

// pluginCmd runs this test binary as a plugin serving bashExecutor.
func pluginCmd() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{serveVar + "=1"}
	return cmd
}

// Launch stops the plugin it started when the test ends. (The whole suite
// over Launch, the Remote recipe, is examples/dash-exec's
// TestConformanceOverThePlugin: there the plugin is a binary built without
// the race detector, which makes a plugin start here cost a second.)
func TestLaunchStopsItsPluginWhenTheTestEnds(t *testing.T) {
	var pluginPID int
	t.Run("launch", func(t *testing.T) {
		x := pluginapitest.Launch(t, pluginCmd())
		ctx := context.Background()
		res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo $PPID"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		pluginPID, _ = strconv.Atoi(strings.TrimSpace(res.Stdout.Text))
		if pluginPID <= 1 || pluginPID == os.Getpid() || !alive(pluginPID) {
			t.Fatalf("the command's parent %q is not a live plugin process", res.Stdout.Text)
		}
	})
	if pluginPID == 0 {
		return
	}
	if alive(pluginPID) {
		_ = syscallKill(pluginPID)
		t.Errorf("the plugin process %d outlived the test that launched it", pluginPID)
	}
}

// A plugin killed under Launch (as the container and SSH kill tests do)
// leaves no socket behind: go-plugin would put it in os.TempDir.
func TestLaunchLeavesNoSocketOfAKilledPlugin(t *testing.T) {
	var sockDir string
	t.Run("launch and kill", func(t *testing.T) {
		_, pid := pluginapitest.LaunchPID(t, pluginCmd())
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, plugin.EnvUnixSocketDir+"="); ok {
				sockDir = v
			}
		}
		if sockDir == "" {
			t.Fatal("the plugin was given no socket directory: its socket goes to os.TempDir and outlives a kill")
		}
		if entries, err := os.ReadDir(sockDir); err != nil || len(entries) == 0 {
			t.Fatalf("the plugin's socket is not in %s: %v %v", sockDir, entries, err)
		}
		_ = syscallKill(pid)
	})
	if sockDir == "" {
		return
	}
	if _, err := os.Stat(sockDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket directory %s of a killed plugin outlived the test: %v", sockDir, err)
	}
}

// An executor that strips its tag from the commands (so what they leave
// outside their process group escapes it) fails the suite with messages
// that say what it must do, and the processes it left are killed.
func TestTheSuiteKillsWhatABrokenExecutorLeaves(t *testing.T) {
	out := runChild(t, "untagged", `^TestBrokenUnderTheSuite$/^(termination|env)$/^(what_the_shell|commands_carry)`)
	requireAll(t, out,
		"--- FAIL: TestBrokenUnderTheSuite/termination/what_the_shell_leaves_running_is_killed_and_counted",
		"--- FAIL: TestBrokenUnderTheSuite/env/commands_carry_the_executor's_tag",
		"the suite killed them. An executor must kill every process a command started, also those that left its process group",
		"LeftoversKilled must count the processes killed after the shell exited",
		"commands must carry a DSH_EXEC_ID tag of the executor's own",
	)
}

// requireAll fails t unless the child's output holds each of wants.
func requireAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
}

// Where the suite cannot read the test's own /proc (the commands run
// elsewhere), it checks through a witness executor, with probe commands:
// an executor that keeps the contract passes, and one that loses what
// left the group fails with the same messages as here, and the suite
// kills what it left.
func TestElsewhereTheSuiteLooksThroughAWitness(t *testing.T) {
	const run = `^TestBrokenUnderTheSuite$/^(termination|background)$/^(what_the_shell|a_lone_escaped|close_kills|start_returns_at_once|close_terminates)`
	out, err := runChildOf(t, "elsewhere", run)
	if err != nil {
		t.Errorf("the suite failed, looking through a witness, an executor that keeps the contract: %v\n%s", err, out)
	}
	requireAll(t, out, "--- PASS: TestBrokenUnderTheSuite/termination/close_kills_what_background_processes_left")
	out = runChild(t, "untagged-elsewhere", run)
	requireAll(t, out,
		"--- FAIL: TestBrokenUnderTheSuite/termination/what_the_shell_leaves_running_is_killed_and_counted",
		"--- FAIL: TestBrokenUnderTheSuite/termination/a_lone_escaped_descendant_is_found_too",
		"the suite killed them. An executor must kill every process a command started, also those that left its process group",
		"sleep 1000",
	)
}

// A Remote factory that launches a plugin and never stops it fails its
// case, and the suite kills the plugin.
func TestTheSuiteKillsAPluginItsFactoryLeftRunning(t *testing.T) {
	out := runChild(t, "forgetful", `^TestBrokenUnderTheSuite$/^describe$`)
	requireAll(t, out,
		"--- FAIL: TestBrokenUnderTheSuite/describe/names_the_shell_service_and_namespace",
		"processes outlived the case and the executor's Close; the suite killed them",
		"a Remote factory must also stop the plugin process it launched",
	)
}

// configureCases are the cases that configure the common settings keys.
var configureCases = []string{
	"settings/defaults_and_caps_come_from_the_settings",
	"settings/the_credential_allowlist_lets_a_variable_through",
	"settings/scrubbing_can_be_turned_off",
	"output/a_spill_stops_at_its_cap_and_says_so",
	"output/background_reads_past_the_buffer_are_lossy;_the_spill_keeps_all",
}

// configureRun selects configureCases (and the unknown key's) in a child.
const configureRun = `^TestBrokenUnderTheSuite$/^(settings|output)$/^(defaults_and|an_unknown_key|the_credential|scrubbing|a_spill_stops|background_reads_past)`

// An executor that takes settings yet refuses the common keys fails each
// case that configures them, naming the keys; it does not skip them.
func TestTheSuiteFailsAnExecutorThatRefusesTheCommonSettings(t *testing.T) {
	out := runChild(t, "refusing", configureRun)
	for _, c := range configureCases {
		requireAll(t, out, "--- FAIL: TestBrokenUnderTheSuite/"+c)
	}
	requireAll(t, out,
		"Configure must accept the common settings key(s) defaultOutputBytes, defaultTimeoutMs, killGraceMs, maxTimeoutMs:",
		"Configure must accept the common settings key(s) spillCapBytes:",
	)
	if strings.Contains(out, "--- SKIP") {
		t.Errorf("the suite skipped cases of an executor that refuses the common settings:\n%s", out)
	}
}

// An executor that takes no settings at all, here or over the wire, has
// the cases that configure the common keys skipped, loudly, naming them.
func TestTheSuiteSkipsLoudlyForAnExecutorWithoutSettings(t *testing.T) {
	for _, setup := range []string{"settingless", "settingless-remote"} {
		t.Run(setup, func(t *testing.T) {
			out, err := runChildOf(t, setup, configureRun)
			if err != nil {
				t.Errorf("the suite failed an executor that takes no settings (%s): %v\n%s", setup, err, out)
			}
			for _, c := range configureCases {
				requireAll(t, out, "--- SKIP: TestBrokenUnderTheSuite/"+c)
			}
			requireAll(t, out,
				"NOT CHECKED: the common settings key(s) defaultOutputBytes, defaultTimeoutMs, killGraceMs, maxTimeoutMs:",
				"NOT CHECKED: the common settings key(s) backgroundBufferBytes:",
				"NOT CHECKED: that Configure refuses an unknown key by name:",
			)
		})
	}
}

// refusingSettings takes settings, and refuses every key.
type refusingSettings struct{ pluginapi.ShellExecutor }

func (refusingSettings) Configure(_ context.Context, settings []byte) error {
	return fmt.Errorf("%w: not a key of mine: %s", pluginapi.ErrInvalidSettings, settings)
}

// settingless takes no settings: it is not Configurable and declares no
// settings schema.
type settingless struct{ pluginapi.ShellExecutor }

func (s settingless) Describe(ctx context.Context) (pluginapi.Description, error) {
	d, err := s.ShellExecutor.Describe(ctx)
	d.SettingsSchema = ""
	return d, err
}

// TestBrokenUnderTheSuite is the child run: the suite over the broken
// setup childVar names. It fails, as it should (but for an executor that
// takes no settings, whose cases about them it skips); it runs only as a
// child.
func TestBrokenUnderTheSuite(t *testing.T) {
	switch os.Getenv(childVar) {
	case "refusing":
		pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor {
			return refusingSettings{bashExecutor("bash", nil)}
		})
	case "settingless":
		pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor {
			return settingless{bashExecutor("bash", nil)}
		})
	case "settingless-remote":
		// Over the wire, the suite cannot see that the executor is not
		// Configurable: the server adapter refuses its settings.
		pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
			return pluginapitest.Serve(t, settingless{bashExecutor("bash", nil)})
		}, pluginapitest.Options{Remote: true})
	case "untagged":
		// The commands run under `env -u DSH_EXEC_ID`: what they start
		// carries no tag, so the executor cannot find what left the group.
		pluginapitest.Run(t, func(t *testing.T) pluginapi.ShellExecutor {
			return bashExecutor("env", []string{"-u", pluginapi.ExecIDVar})
		})
	case "untagged-elsewhere", "elsewhere":
		// The suite cannot read this machine's /proc: it must look through
		// a witness, here a second executor of the same kind.
		pluginapitest.BlindHostProc(t)
		pre := []string{"-u", pluginapi.ExecIDVar}
		if os.Getenv(childVar) == "elsewhere" {
			pre = []string{}
		}
		pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
			return bashExecutor("env", pre)
		}, pluginapitest.Options{Elsewhere: true})
	case "forgetful":
		// The plugin is launched and never killed.
		pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
			cmd := pluginCmd()
			sockDir, err := os.MkdirTemp("", "dsh-test-sock-") // not in os.TempDir itself
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
			cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+sockDir)
			client := plugin.NewClient(&plugin.ClientConfig{
				HandshakeConfig:  pluginapi.Handshake,
				VersionedPlugins: pluginapi.PluginSets(),
				Cmd:              cmd,
				AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
				Logger:           hclog.NewNullLogger(),
			})
			rpc, err := client.Client()
			if err != nil {
				t.Fatal(err)
			}
			raw, err := rpc.Dispense(pluginapi.PluginName)
			if err != nil {
				t.Fatal(err)
			}
			return raw.(pluginapi.ShellExecutor)
		}, pluginapitest.Options{Remote: true})
	default:
		t.Skip("runs only as the child of the tests that expect it to fail")
	}
}

// runChild runs TestBrokenUnderTheSuite's cases matching run, in this test
// binary run again with childVar set to setup; it fails unless the child
// fails, and unless nothing the child started is alive once it ended. It
// returns the child's output.
func runChild(t *testing.T, setup, run string) string {
	t.Helper()
	out, err := runChildOf(t, setup, run)
	if err == nil {
		t.Errorf("the suite passed a broken executor (%s):\n%s", setup, out)
	}
	return out
}

// runChildOf is runChild, the child's failure returned as its error.
func runChildOf(t *testing.T, setup, run string) (string, error) {
	t.Helper()
	mark := make([]byte, 8)
	_, _ = rand.Read(mark)
	kv := markVar + "=" + hex.EncodeToString(mark)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+run, "-test.v", "-test.count=1", "-test.timeout=100s")
	cmd.Env = append(os.Environ(), childVar+"="+setup, kv)
	out, err := cmd.CombinedOutput()
	if left := withEnv(kv); len(left) > 0 {
		for _, pid := range left {
			_ = syscallKill(pid)
		}
		t.Errorf("processes %v of the child run outlived it (now killed)", left)
	}
	return string(out), err
}

// withEnv lists the live processes, other than this one, whose environment
// holds kv.
func withEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(append([]byte{0}, env...), []byte("\x00"+kv+"\x00")) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && !bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

// syscallKill SIGKILLs pid.
func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
