package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-host/dsh-host/internal/k8stestlock"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// kubernetesPlugin builds the kubernetes executor's plugin, once, into a
// plugin directory of its own.
var kubernetesPlugin = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(bins.dir, "kubernetes-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "dsh-executor-kubernetes"), "github.com/dsh-host/dsh-host/plugins/kubernetes/cmd/dsh-executor-kubernetes")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the kubernetes plugin: %v\n%s", err, out)
	}
	return dir, nil
})

// k8sCluster is the cluster under test (.ci/k8s starts one and sets
// KUBECONFIG, DSH_TEST_K8S_IMAGE and DSH_TEST_K8S_NAMESPACE), with a
// namespace of the test's own: plugins/kubernetes's tests, which may run
// at the same time, require DSH_TEST_K8S_NAMESPACE to hold nothing of
// anyone else's.
type k8sCluster struct {
	cs        k8s.Interface
	image     string
	namespace string
}

// kubernetesCluster is the cluster under test, with a new namespace,
// DSH_TEST_K8S_NAMESPACE-mcp-RANDOM, made for the test. The test is
// skipped without a cluster, and fails under CI=true. It holds the
// cluster's test lock shared (k8stestlock). At the test's end
// the namespace must hold no pod, Lease or NetworkPolicy (the test fails
// otherwise); it is then deleted, and waited for until it is gone.
func kubernetesCluster(t *testing.T) *k8sCluster {
	t.Helper()
	for _, k := range []string{"KUBECONFIG", "DSH_TEST_K8S_IMAGE", "DSH_TEST_K8S_NAMESPACE"} {
		if os.Getenv(k) == "" {
			skipOrFail(t, "no cluster: %s is not set (set KUBECONFIG, DSH_TEST_K8S_IMAGE and DSH_TEST_K8S_NAMESPACE; .ci/k8s up starts one, and .ci/run does under CI=true)", k)
		}
	}
	// The API server must answer throughout: a test of plugins/kubernetes
	// that restarts it waits, and this one waits for it.
	k8stestlock.Shared(t)
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	c := &k8sCluster{cs: cs, image: os.Getenv("DSH_TEST_K8S_IMAGE"), namespace: os.Getenv("DSH_TEST_K8S_NAMESPACE") + "-mcp-" + hex.EncodeToString(b)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the test's namespace %s: %v", c.namespace, err)
	}
	t.Cleanup(func() { c.deleteNamespace(t) })
	// A pod is admitted only once its namespace's default ServiceAccount
	// exists, which the controller manager makes a moment later.
	for {
		if _, err := cs.CoreV1().ServiceAccounts(c.namespace).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("the default ServiceAccount of %s: %v", c.namespace, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return c
}

// left lists what is in the test's namespace: its pods, Leases and
// NetworkPolicies, each as KIND/NAME.
func (c *k8sCluster) left(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var found []string
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the pods: %v", err)
	}
	for _, p := range pods.Items {
		found = append(found, "pod/"+p.Name)
	}
	leases, err := c.cs.CoordinationV1().Leases(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the Leases: %v", err)
	}
	for _, l := range leases.Items {
		found = append(found, "lease/"+l.Name)
	}
	policies, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the NetworkPolicies: %v", err)
	}
	for _, np := range policies.Items {
		found = append(found, "networkpolicy/"+np.Name)
	}
	return found
}

// deleteNamespace fails the test when the namespace still holds a pod, a
// Lease or a NetworkPolicy, then deletes it and waits (a minute at most)
// until it is gone.
func (c *k8sCluster) deleteNamespace(t *testing.T) {
	t.Helper()
	for _, what := range c.left(t) {
		t.Errorf("%s is still in %s at the test's end", what, c.namespace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.cs.CoreV1().Namespaces().Delete(ctx, c.namespace, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Errorf("deleting the test's namespace %s: %v", c.namespace, err)
		return
	}
	for {
		_, err := c.cs.CoreV1().Namespaces().Get(ctx, c.namespace, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if ctx.Err() != nil {
			t.Errorf("the test's namespace %s is still there a minute after its deletion (%v)", c.namespace, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// settings is a settings file for the executor in the test's namespace:
// pods of the test image, the agent built static, a workspace (an
// emptyDir) at /workspace, and the sandbox's defaults.
func (c *k8sCluster) settings(t *testing.T, extra string) string {
	t.Helper()
	return settingsFile(t, extra+"shell:\n  image: "+c.image+"\n  namespace: "+c.namespace+"\n  agent: "+bins.agent+
		"\n  workspace: {mountPath: /workspace}\n")
}

// k8sServer is a `dsh-host mcp --executor kubernetes` and a client
// session of it.
type k8sServer struct {
	cs *mcp.ClientSession
	// end ends the session and the server (closing its stdin, or
	// SIGTERM over HTTP) and returns its exit code once it exited.
	end func() int
}

// k8sSession starts `dsh-host mcp --executor kubernetes` with settings,
// tagged tag, over stdio or over HTTP (on loopback, with no token), and
// connects a client to it. Over stdio, closing the session closes the
// server's stdin and waits a minute for it to exit (its executor's Close
// waits until its pods are gone) before a SIGTERM.
func k8sSession(t *testing.T, tag, settings string, overHTTP bool) k8sServer {
	t.Helper()
	dir, err := kubernetesPlugin()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--plugin-dir", dir, "--executor", "kubernetes", "--settings", settings}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh-host-test", Version: "0"}, nil)
	if overHTTP {
		srv := startHTTPServerArgs(t, tag, args)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return k8sServer{cs: cs, end: func() int {
			if err := cs.Close(); err != nil {
				t.Errorf("closing the session: %v", err)
			}
			srv.stop(t)
			return srv.code
		}}
	}
	cmd := exec.Command(bins.host, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), tagVar+"="+tag)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return k8sServer{cs: cs, end: func() int {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if cmd.ProcessState == nil {
			t.Fatal("dsh-host mcp still runs after the session's close")
		}
		return cmd.ProcessState.ExitCode()
	}}
}

// inPod lists every process a command sees in its pod, one command line a
// line.
const inPod = `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`

// awaitProcess calls bash until inPod shows (or no longer shows) mark.
func awaitProcess(t *testing.T, cs *mcp.ClientSession, mark string, want bool, why string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, isErr := call(t, cs, "bash", map[string]any{"command": inPod})
		if isErr {
			t.Fatalf("listing the pod's processes: %s", out)
		}
		if strings.Contains(out, mark) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: a process with %s in its command line is there: %v, want %v:\n%s", why, mark, !want, want, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The bash tool of `dsh-host mcp --executor kubernetes`, over stdio, runs
// in a pod the executor creates on a real cluster: output and exit codes,
// the working directory carried between calls, the sandbox's mode in the
// schema and in a denial's note, a failing command and a timeout settled
// as results, and a background job read incrementally and killed (its
// process gone from the pod). While the session runs its namespace holds
// its pod, the pod's deny-all NetworkPolicy and the plugin's Lease; once
// the session ends (the client closes the server's stdin; over HTTP, the
// server gets SIGTERM), the server exits 0 and they are all gone.
func TestKubernetesMCPBash(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) { testKubernetesMCPBash(t, transport == "http") })
	}
}

func testKubernetesMCPBash(t *testing.T, overHTTP bool) {
	c := kubernetesCluster(t)
	tag := scenario(t)
	srv := k8sSession(t, tag, c.settings(t, ""), overHTTP)
	cs := srv.cs
	bash := func(args map[string]any) string {
		t.Helper()
		text, isErr := call(t, cs, "bash", args)
		if isErr {
			t.Fatalf("bash %v: tool error %q", args, text)
		}
		return text
	}
	run := func(command string) string { t.Helper(); return bash(map[string]any{"command": command}) }

	began := time.Now()
	if got := run("echo hi from $(cat /proc/1/cgroup >/dev/null && hostname); exit 3"); !regexp.MustCompile(`^hi from dsh-\S+\n\[exit code: 3\]$`).MatchString(got) {
		t.Errorf("the first command: %q, want its output from a pod named dsh-..., then exit code 3", got)
	}
	t.Logf("the first command (the pod created and started) took %s", time.Since(began))

	// The pod is the executor's, in the test's namespace, with its
	// NetworkPolicy and the plugin's Lease.
	pods, err := c.cs.CoreV1().Pods(c.namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "dsh-host.dev/executor=kubernetes"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].Labels["dsh-host.dev/mode"] != "workspace-write" {
		t.Fatalf("the executor's pods in %s: %d, want one of mode workspace-write", c.namespace, len(pods.Items))
	}
	pod := pods.Items[0].Name
	if got := run("hostname"); got != pod {
		t.Errorf("hostname: %q, want the pod %s", got, pod)
	}
	if left := c.left(t); len(left) != 3 || !strings.Contains(strings.Join(left, " "), "networkpolicy/") || !strings.Contains(strings.Join(left, " "), "lease/") {
		t.Errorf("the namespace while the session runs: %v, want its pod, its NetworkPolicy and the plugin's Lease", left)
	}

	// The working directory: commands start in the workspace, and a cd
	// holds for the next call.
	if got := run("pwd"); got != "/workspace" {
		t.Errorf("pwd: %q, want the workspace", got)
	}
	if got := run("mkdir -p sub/deeper && cd sub && pwd"); got != "/workspace/sub\n[cwd: /workspace/sub]" {
		t.Errorf("cd sub: %q", got)
	}
	if got := run("pwd"); got != "/workspace/sub\n[cwd: /workspace/sub]" {
		t.Errorf("the next call: %q, want it to start in /workspace/sub", got)
	}
	if got := run("cd deeper; exit 4"); got != "[cwd: /workspace/sub/deeper]\n[exit code: 4]" {
		t.Errorf("cd deeper; exit 4: %q", got)
	}

	// The sandbox: the schema names the mode an escalation leaves; the
	// workspace is writable, the root is not, and the note says which
	// mode likely refused it, with the evidence.
	if raw := bashSchema(t, cs); !strings.Contains(raw, `"sandbox_permissions"`) || !strings.Contains(raw, "outside the sandbox (workspace-write)") {
		t.Errorf("the bash schema does not offer escalation out of workspace-write: %s", raw)
	}
	if got := run("echo kept > /workspace/f && cat /workspace/f"); !strings.HasPrefix(got, "kept\n") {
		t.Errorf("a write to the workspace: %q", got)
	}
	got := run("touch /etc/escaped")
	if !strings.Contains(got, "Read-only file system") || !strings.Contains(got, "[sandbox workspace-write likely refused this (") ||
		!strings.Contains(got, "sandbox_permissions: require_escalated") || !strings.HasSuffix(got, "[exit code: 1]") {
		t.Errorf("a write to the pod's root: %q, want the refusal, the sandbox's note naming workspace-write, and exit code 1", got)
	}

	// A failing command and a timeout are results, not tool errors, and
	// say how the command ended.
	if got := run("echo out; echo err >&2; exit 7"); got != "out\n[stderr]\nerr\n[cwd: /workspace/sub/deeper]\n[exit code: 7]" {
		t.Errorf("a failing command: %q", got)
	}
	began = time.Now()
	got = bash(map[string]any{"command": "echo before; exec sleep 4441", "timeout": 1500})
	if took := time.Since(began); !strings.HasPrefix(got, "before\n") || !strings.Contains(got, "[timed out after 1500 ms; the command and its processes were killed]") ||
		!strings.HasSuffix(got, "[killed by signal: SIGKILL]") && !strings.HasSuffix(got, "[killed by signal: SIGTERM]") || took > 10*time.Second {
		t.Errorf("a timeout of 1500 ms: %q after %s", got, took)
	}
	awaitProcess(t, cs, "sleep 4441", false, "after the timeout")

	// A background job: its output read in pieces, never twice, then
	// killed, its process gone from the pod.
	out, isErr := call(t, cs, "bash", map[string]any{"command": "for i in $(seq 1 100000); do echo tick $i; sleep 0.2; done; exec sleep 5552", "run_in_background": true})
	id := jobIDPattern.FindString(out)
	if isErr || id == "" {
		t.Fatalf("bash in the background: %q", out)
	}
	tick := regexp.MustCompile(`(?m)^tick (\d+)$`)
	var ticks []string
	for reads := 0; reads < 3; reads++ {
		out, isErr := call(t, cs, "job_output", map[string]any{"job_id": id, "wait_ms": 5000})
		if isErr || !strings.Contains(out, "\n[job "+id+": running") {
			t.Fatalf("job_output %d: %q, want output and the job running", reads, out)
		}
		got := tick.FindAllStringSubmatch(out, -1)
		if len(got) == 0 {
			t.Fatalf("job_output %d: %q, want new ticks", reads, out)
		}
		for _, m := range got {
			ticks = append(ticks, m[1])
		}
		time.Sleep(500 * time.Millisecond)
	}
	for i, n := range ticks {
		if n != fmt.Sprint(i+1) {
			t.Fatalf("the ticks across three job_output calls: %v, want 1, 2, 3, ... each once", ticks)
		}
	}
	awaitProcess(t, cs, "seq 1 100000", true, "while the job runs")
	if out, isErr := call(t, cs, "job_kill", map[string]any{"job_id": id}); isErr || !strings.HasSuffix(out, "job "+id+" killed") {
		t.Errorf("job_kill: %q", out)
	}
	if out, _ := call(t, cs, "jobs", nil); !strings.Contains(out, id+"\tkilled") {
		t.Errorf("jobs after the kill: %q", out)
	}
	awaitProcess(t, cs, "seq 1 100000", false, "after job_kill")

	// The session's end: the server exits, and its pod, NetworkPolicy and
	// Lease are gone from the namespace by then.
	began = time.Now()
	if code := srv.end(); code != 0 {
		t.Errorf("dsh-host mcp exited %d at the session's end, want 0", code)
	}
	t.Logf("the server's end took %s", time.Since(began))
	if left := c.left(t); len(left) > 0 {
		t.Errorf("once the server exited, %s still holds %v", c.namespace, left)
	}
}

// The bash tool's text carries a sandbox's mode (above), not its facts:
// those are the result's, which `dsh-host run --json` prints. With the
// kubernetes executor they say the pod's mode, what the pod enforces, and
// that the network's denial is a NetworkPolicy the executor does not
// enforce. The run's pod, NetworkPolicy and Lease are gone once it exits.
func TestKubernetesRunSandboxFacts(t *testing.T) {
	c := kubernetesCluster(t)
	tag := scenario(t)
	dir, err := kubernetesPlugin()
	if err != nil {
		t.Fatal(err)
	}
	r := dsh(t, tag, "run", "--plugin-dir", dir, "--executor", "kubernetes", "--settings", c.settings(t, ""), "--json", "--", "echo in the pod")
	var res struct {
		ExitCode *int                    `json:"exitCode"`
		Stdout   struct{ Text string }   `json:"stdout"`
		Sandbox  *pluginapi.SandboxFacts `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	if r.code != 0 || res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout.Text != "in the pod\n" {
		t.Fatalf("dsh-host run: exit %d, %s\n%s", r.code, r.stdout, r.stderr)
	}
	sb := res.Sandbox
	if sb == nil || sb.Mode != pluginapi.SandboxWorkspaceWrite || sb.LikelyDenial {
		t.Fatalf("sandbox facts %+v, want mode workspace-write and no denial", sb)
	}
	enforced := strings.Join(sb.Enforced, "\n")
	for _, want := range []string{"capabilities: all dropped", "allowPrivilegeEscalation: false", "seccomp:", "read-only root file system",
		"workspace /workspace (the emptyDir): mounted read-write", "service-account token: not mounted"} {
		if !strings.Contains(enforced, want) {
			t.Errorf("the facts' enforced list lacks %q:\n%s", want, enforced)
		}
	}
	for _, f := range sb.Enforced {
		if strings.HasPrefix(f, "network") {
			t.Errorf("the facts claim the network's denial as enforced: %q", f)
		}
	}
	if !slices.ContainsFunc(sb.NotEnforced, func(f string) bool {
		return strings.HasPrefix(f, "network denied") && strings.Contains(f, "NetworkPolicy")
	}) {
		t.Errorf("the facts do not say that the NetworkPolicy's denial is not enforced by the executor: %q", sb.NotEnforced)
	}
	if left := c.left(t); len(left) > 0 {
		t.Errorf("once dsh-host run exited, %s still holds %v", c.namespace, left)
	}
}

// sessionPods lists the pods that serve partition (an MCP session's id).
func (c *k8sCluster) sessionPods(t *testing.T, partition string) []string {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(c.namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "dsh-host.dev/executor=kubernetes,dsh-host.dev/partition=" + partition,
	})
	if err != nil {
		t.Fatalf("listing session %s's pods: %v", partition, err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// Two MCP sessions over HTTP, with the kubernetes executor, run in pods of
// their own: from A, /proc shows none of B's job (its command line, the
// variable it exported), and A's kill of B's pid fails, B's job running
// on. Once A's session ends and its jobs' grace is over, A's pod is gone
// (the API server says so) and B's is not; the server's end removes B's,
// and nothing of theirs is left in the namespace.
func TestKubernetesMCPHTTPSessionsGetPodsOfTheirOwn(t *testing.T) {
	c := kubernetesCluster(t)
	dir, err := kubernetesPlugin()
	if err != nil {
		t.Fatal(err)
	}
	tag := scenario(t)
	settings := c.settings(t, tokenSettings("idleTimeoutMs: 60000", "jobGraceMs: 500"))
	srv := startHTTPServerArgs(t, tag, []string{"--plugin-dir", dir, "--executor", "kubernetes", "--settings", settings}, "DSH_TEST_MCP_TOKEN="+testToken)
	a, _ := httpSession(t, srv.url, testToken)
	b, _ := httpSession(t, srv.url, testToken)
	idA, idB := a.ID(), b.ID()

	// B's job gets a pid beyond any of A's few commands: A's kill of it
	// names no process there, rather than, by chance, one of A's own.
	if out, isErr := call(t, b, "bash", map[string]any{"command": `for i in {1..600}; do ( : ); done`}); isErr {
		t.Fatalf("B's forks: %s", out)
	}
	mark := fmt.Sprintf("session-b-secret-%d", time.Now().UnixNano())
	out, isErr := call(t, b, "bash", map[string]any{"command": "export MARK=" + mark + "; echo $$; exec sleep 7774", "run_in_background": true})
	if isErr {
		t.Fatalf("B's job: %s", out)
	}
	jobB := jobIDPattern.FindString(out)
	out, _ = call(t, b, "job_output", map[string]any{"job_id": jobB, "wait_ms": 20000})
	pidB := regexp.MustCompile(`^\d+`).FindString(out)
	if pidB == "" {
		t.Fatalf("B's job printed no pid: %q", out)
	}
	if out, isErr := call(t, a, "bash", map[string]any{"command": "exec sleep 6665", "run_in_background": true}); isErr {
		t.Fatalf("A's job: %s", out)
	}
	var fromA string
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(fromA, "sleep 6665"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("A does not see its own job (sleep 6665), so what it does not see proves nothing:\n%s", fromA)
		}
		fromA, _ = call(t, a, "bash", map[string]any{"command": everyProcess})
	}
	if strings.Contains(fromA, "sleep 7774") || strings.Contains(fromA, mark) {
		t.Errorf("session A sees session B's job (sleep 7774, or its environment's %s):\n%s", mark, fromA)
	}
	fromB, _ := call(t, b, "bash", map[string]any{"command": everyProcess})
	if !strings.Contains(fromB, "sleep 7774") || strings.Contains(fromB, "sleep 6665") {
		t.Errorf("session B sees (want its own sleep 7774, none of A's sleep 6665):\n%s", fromB)
	}
	if out, _ := call(t, a, "bash", map[string]any{"command": "kill -KILL " + pidB + "; echo $?"}); strings.HasPrefix(out, "0\n") || !strings.Contains(out, "No such process") {
		t.Errorf("A's kill of B's pid %s: %q, want no such process", pidB, out)
	}
	time.Sleep(500 * time.Millisecond)
	if out, _ := call(t, b, "jobs", nil); !strings.Contains(out, jobB+"\trunning") {
		t.Errorf("B's job after A killed pid %s: %q, want it running", pidB, out)
	}

	podsA, podsB := c.sessionPods(t, idA), c.sessionPods(t, idB)
	hostA, _ := call(t, a, "bash", map[string]any{"command": "hostname"})
	hostB, _ := call(t, b, "bash", map[string]any{"command": "hostname"})
	if len(podsA) != 1 || len(podsB) != 1 || podsA[0] != hostA || podsB[0] != hostB {
		t.Fatalf("session A's pods %v (it runs in %s), session B's %v (it runs in %s): want one each, the one it runs in", podsA, hostA, podsB, hostB)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); len(c.sessionPods(t, idA)) > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("session A closed, its jobs' grace 500 ms: its pod %v is still there after 15s", c.sessionPods(t, idA))
		}
	}
	if pods := c.sessionPods(t, idB); len(pods) != 1 {
		t.Errorf("session B's pods after A's end: %v, want its one", pods)
	}
	if out, _ := call(t, b, "jobs", nil); !strings.Contains(out, jobB+"\trunning") {
		t.Errorf("B's job after A's end: %q, want it running", out)
	}
	srv.stop(t)
	if srv.code != 0 {
		t.Errorf("dsh-host mcp --http exited %d on SIGTERM, want 0", srv.code)
	}
	if left := c.left(t); len(left) > 0 {
		t.Errorf("once the server exited, %s still holds %v", c.namespace, left)
	}
}
