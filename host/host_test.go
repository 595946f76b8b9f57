package host_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/pluginapi/pluginapitest"
	"github.com/dsh-host/dsh-host/registry"
)

// pluginBin and sandboxBin are the bash-local and bash-sandbox plugin
// binaries, built once for these tests.
var pluginBin, sandboxBin string

func TestMain(m *testing.M) {
	if os.Getenv("DSH_HOST_CHILD") == "1" {
		os.Exit(m.Run()) // the host process of TestAPluginOutlivesNoHost
	}
	dir, err := pluginapitest.BuildDir("host-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "dsh-executor-bash-local")
	sandboxBin = filepath.Join(dir, "dsh-executor-bash-sandbox")
	for bin, pkg := range map[string]string{
		pluginBin:  "github.com/dsh-host/dsh-host/plugins/bash-local/cmd/dsh-executor-bash-local",
		sandboxBin: "github.com/dsh-host/dsh-host/plugins/bash-sandbox/cmd/dsh-executor-bash-sandbox",
	} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building the plugin:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func launch(t *testing.T, ex host.Executor) *host.Host {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := host.Launch(ctx, host.Options{Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && !strings.HasPrefix(string(stat[i+1:]), " Z")
}

// readPID reads a command's output with read until its first line is
// whole, and returns that line as a process id. The test fails unless it is
// a positive pid within 10 s: a pid of 0 (a line not read, or not a number)
// would make every check that the process is gone pass at once.
func readPID(t *testing.T, read func() (string, error)) int {
	t.Helper()
	var out strings.Builder
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		delta, err := read()
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(delta)
		if pid, whole, err := firstLinePID(out.String()); whole {
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no whole line (a pid) within 10 s; the output so far: %q", out.String())
		}
	}
}

// firstLinePID parses the first line of out as a process id; whole is false
// while that line has not ended. A line that is not a positive number is an
// error.
func firstLinePID(out string) (pid int, whole bool, err error) {
	line, _, whole := strings.Cut(out, "\n")
	if !whole {
		return 0, false, nil
	}
	pid, err = strconv.Atoi(strings.TrimSpace(line))
	if err == nil && pid <= 0 {
		err = fmt.Errorf("%d is no process id", pid)
	}
	if err != nil {
		return 0, true, fmt.Errorf("the first line %q is not a process id: %w", line, err)
	}
	return pid, true, nil
}

// requireGone fails unless pid is gone (or a zombie) within a few seconds.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still alive", pid)
}

func TestConformanceOverARealPlugin(t *testing.T) {
	pluginapitest.RunWith(t, func(t *testing.T) pluginapi.ShellExecutor {
		return launch(t, host.Executor{Name: "bash-local", Path: pluginBin}).Shell()
	}, pluginapitest.Options{Remote: true})
}

func TestLaunchDescribesAndRuns(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	if d := h.Description(); d.Name != "bash-local" || d.SettingsNamespace != pluginapi.SettingsNamespace {
		t.Errorf("description %+v", d)
	}
	ctx := context.Background()
	spec, err := h.Shell().Resolve(ctx, pluginapi.ExecRequest{Command: "echo $PPID"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Shell().Run(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Stdout.Text); got != fmt.Sprint(h.PluginPID()) {
		t.Errorf("the command's parent is %s, want the plugin process %d: commands must run out of process", got, h.PluginPID())
	}
}

func TestCloseStopsThePluginAndEverythingItStarted(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	ctx := context.Background()
	pluginPID := h.PluginPID()
	pid := startSleep(t, h)
	sockDir := envOf(t, pluginPID, "PLUGIN_UNIX_SOCKET_DIR")
	if sockDir == "" {
		t.Fatal("the plugin was given no socket directory")
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	requireGone(t, pid)
	requireGone(t, pluginPID)
	if _, err := os.Stat(sockDir); !os.IsNotExist(err) {
		t.Errorf("the plugin's socket directory %s outlived Close: %v", sockDir, err)
	}
	if _, err := h.Shell().Resolve(ctx, pluginapi.ExecRequest{Command: "true"}); !errors.Is(err, pluginapi.ErrPluginUnavailable) {
		t.Errorf("a call after Close: %v, want ErrPluginUnavailable", err)
	}
}

// startSleep starts a background sleep through h and returns its pid.
func startSleep(t *testing.T, h *host.Host) int {
	t.Helper()
	ctx := context.Background()
	spec, err := h.Shell().Resolve(ctx, pluginapi.ExecRequest{Command: "echo $$; exec sleep 1000"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.Shell().Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return readPID(t, func() (string, error) {
		r, err := p.ReadOutput(ctx)
		return r.Delta, err
	})
}

func TestAPluginSentSIGTERMTerminatesWhatItRuns(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	pluginPID := h.PluginPID()
	pid := startSleep(t, h)
	if err := syscall.Kill(pluginPID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid)
	requireGone(t, pluginPID)
}

func TestLaunchRefusesABinaryThatIsNotAPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "true", Path: "/bin/true"}})
	if !errors.Is(err, host.ErrLaunch) {
		t.Fatalf("Launch of /bin/true: %v, want ErrLaunch", err)
	}
}

func TestLaunchRefusesAChecksumMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wrong := sha256.Sum256([]byte("not the binary"))
	_, err := host.Launch(ctx, host.Options{Executor: host.Executor{Name: "bash-local", Path: pluginBin, Checksum: wrong[:]}})
	if !errors.Is(err, host.ErrLaunch) || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Launch with a wrong checksum: %v, want a checksum error", err)
	}
	data, err := os.ReadFile(pluginBin)
	if err != nil {
		t.Fatal(err)
	}
	right := sha256.Sum256(data)
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin, Checksum: right[:]})
	if h.PluginPID() == 0 {
		t.Error("the plugin with the right checksum is not running")
	}
}

func TestAPluginOutlivesNoHost(t *testing.T) {
	if os.Getenv("DSH_HOST_CHILD") == "1" {
		// The child, a host: a runtime with a job that leaves a setsid
		// child; it prints the plugin's pid and the escaped one's, then
		// waits to be killed.
		ctx := context.Background()
		r, err := host.StartRuntime(ctx, host.RuntimeOptions{
			Options: host.Options{Executor: host.Executor{Name: "bash-local", Path: os.Getenv("DSH_PLUGIN_BIN")}},
		})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		job, err := r.Jobs().Start(ctx, "alice", pluginapi.ExecRequest{Command: "setsid sleep 1001 & echo $!; exec sleep 1000"})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		var out strings.Builder
		var escaped int
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			d, _, err := r.Jobs().Output(ctx, "alice", job.ID)
			if err != nil {
				fmt.Println("error", err)
				os.Exit(1)
			}
			out.WriteString(d.Delta)
			pid, whole, err := firstLinePID(out.String())
			if err != nil || (!whole && time.Now().After(deadline)) {
				fmt.Printf("error: the escaped process's pid: %v (output %q)\n", err, out.String())
				os.Exit(1)
			}
			if whole {
				escaped = pid
				break
			}
		}
		_, pid := r.Generation()
		fmt.Println("plugin", pid, escaped)
		select {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAPluginOutlivesNoHost$")
	// The killed host cannot remove its directories: let them be the test's.
	cmd.Env = append(os.Environ(), "DSH_HOST_CHILD=1", "DSH_PLUGIN_BIN="+pluginBin, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// A child that never says its line must not hold the test: past the
	// bound, the cleanup kills it, which ends the read.
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- line
	}()
	var line string
	select {
	case line = <-said:
	case <-time.After(30 * time.Second):
		t.Fatal("the child said nothing within 30 s")
	}
	var word string
	var pluginPID, escaped int
	if _, err := fmt.Sscan(line, &word, &pluginPID, &escaped); err != nil || word != "plugin" || pluginPID <= 0 || escaped <= 0 {
		t.Fatalf("the child said %q, want \"plugin PID ESCAPED\" with two pids: %v", line, err)
	}
	children := childrenOf(pluginPID)
	if len(children) == 0 {
		t.Fatal("the plugin has no child: the background sleep did not start")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	requireGone(t, pluginPID)
	for _, c := range append(children, escaped) {
		requireGone(t, c)
	}
	if took := time.Since(killed); took > 2*time.Second {
		t.Errorf("what the dead host started took %s to go; the bound is 2 s", took)
	}
}

// envOf reads the variable name from pid's environment.
func envOf(t *testing.T, pid int, name string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(data), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// childrenOf lists the direct children of pid (of all its threads), from
// /proc.
func childrenOf(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			var c int
			if _, err := fmt.Sscan(f, &c); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// pluginsRunning lists this test process's children that run the plugin
// binary.
func pluginsRunning() []int {
	var out []int
	for _, pid := range childrenOf(os.Getpid()) {
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == pluginBin {
			out = append(out, pid)
		}
	}
	return out
}

func TestMountRefusesTwoShellsAndLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ex := host.Executor{Name: "bash-local", Path: pluginBin}
	_, err := host.Mount(ctx, []host.Executor{ex, ex}, host.Options{})
	if !errors.Is(err, registry.ErrDuplicateService) {
		t.Fatalf("Mount of two shells: %v, want ErrDuplicateService", err)
	}
	if !strings.Contains(err.Error(), `"shell"`) || strings.Count(err.Error(), "bash-local") < 2 {
		t.Errorf("error %q does not name the service and both providers", err)
	}
	for deadline := time.Now().Add(5 * time.Second); len(pluginsRunning()) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("plugins %v still run after the refused mount", pluginsRunning())
		}
	}
}

func TestMountOneShell(t *testing.T) {
	ctx := context.Background()
	m, err := host.Mount(ctx, []host.Executor{{Name: "bash-local", Path: pluginBin}}, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if got := m.Shell().Description().Name; got != "bash-local" {
		t.Errorf("shell is %q", got)
	}
}

func TestSpillFilesGoWithTheHostEvenWhenThePluginDied(t *testing.T) {
	h := launch(t, host.Executor{Name: "bash-local", Path: pluginBin})
	ctx := context.Background()
	res, err := pluginapi.RunRequest(ctx, h.Shell(), pluginapi.ExecRequest{Command: "head -c 100000 /dev/zero"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spill := res.Stdout.SpillPath
	if _, err := os.Stat(spill); err != nil {
		t.Fatalf("spill file %q: %v", spill, err)
	}
	pid := h.PluginPID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid)
	_ = h.Close(ctx)
	if _, err := os.Stat(spill); !os.IsNotExist(err) {
		t.Errorf("the spill file %s outlived the host: %v", spill, err)
	}
}
