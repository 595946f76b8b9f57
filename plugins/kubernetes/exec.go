package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/dsh-host/dsh-host/internal/agentbin"
	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/remoteexec"
)

// attachedAgentDir is where the agent is put in a pod the executor
// attached to (one it created has agentDir).
const attachedAgentDir = "/tmp/.dsh-agent"

// commandTimeout bounds each short command of the agent's start (uname,
// the upload and its check).
const commandTimeout = 60 * time.Second

// executor is an exec of command in the pod's container: over WebSocket,
// falling back to SPDY where the API server (or a proxy) refuses the
// upgrade, as kubectl does.
func (p *pod) executor(command []string, stdin bool) (remotecommand.Executor, error) {
	u := p.c.cs.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(p.c.namespace).Name(p.name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: p.container, Command: command, Stdin: stdin, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec).URL()
	spdy, err := remotecommand.NewSPDYExecutor(p.c.rest, "POST", u)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(p.c.rest, "GET", u.String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// output runs script with bash in the pod, stdin its input (none when
// nil), and returns its stdout; an error has its stderr.
func (p *pod) output(ctx context.Context, script string, stdin io.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	ex, err := p.executor([]string{"bash", "-c", script}, stdin != nil)
	if err != nil {
		return "", err
	}
	var out, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &stderr})
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return out.String(), err
	}
	return out.String(), nil
}

// startAgent brings the agent in, for the pod's architecture (unless a
// copy with its SHA-256 is there already: in a pod attached to, or one
// reused, after an earlier session), checks its SHA-256 there, and runs it
// over one exec whose stdio is the session's stream, with env. The pod is
// watched while the session lasts: when it is deleted or ends, the stream
// is cut, and the session's Lost says why.
func (p *pod) startAgent(ctx context.Context, agentPath string, env []string, reused bool) (*remoteexec.Session, error) {
	where := p.String()
	arch, err := p.output(ctx, "uname -m", nil)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: uname -m: %w", where, err)
	}
	goarch := agentbin.UnameArch(arch)
	if goarch == "" {
		return nil, fmt.Errorf("kubernetes: %s is %s: the agent is built for x86_64 and aarch64", where, strings.TrimSpace(arch))
	}
	local, err := agentbin.Find(agentPath, goarch, "the pod")
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	sum, err := agentbin.Sum(local)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	dir := agentDir
	if !p.created {
		dir = attachedAgentDir
	}
	remote := dir + "/" + sum[:16] + "/dsh-agent"
	if err := p.upload(ctx, local, remote, sum, reused); err != nil {
		return nil, err
	}
	command := []string{remote, "--stdio"}
	if p.created {
		command = append(command, "--no-setid") // see setIDFact
	}
	if len(env) > 0 {
		command = append(append([]string{"env"}, env...), command...)
	}
	ex, err := p.executor(command, true)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %s: the agent's exec: %w", where, err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	streamCtx, cancel := context.WithCancel(context.Background())
	var lost lostReason
	cut := func(why error) {
		lost.set(why)
		cancel()
		outW.CloseWithError(why)
		inR.CloseWithError(why)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		err := ex.StreamWithContext(streamCtx, remotecommand.StreamOptions{
			Stdin: inR, Stdout: outW, Stderr: agentbin.Stderr{W: logOutput, Where: where, Mu: &logMu},
		})
		if err != nil && streamCtx.Err() == nil {
			logf("%s: the agent's exec stream ended: %v\n", where, err)
		}
		if err == nil {
			err = io.EOF
		}
		if streamCtx.Err() == nil {
			// The stream ended before the watch said why: the pod may have
			// gone under it (its container killed first).
			if why := p.goneNow(); why != nil {
				lost.set(why)
				err = why
			}
		}
		outW.CloseWithError(err)
		inR.CloseWithError(err)
	}()
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		p.watchWhile(streamCtx, cut)
	}()
	return &remoteexec.Session{
		Stream: pluginapi.Pipes(outR, inW),
		// The stream is closed: the agent, its stdin ended, kills what it
		// ran and exits, which ends the exec. The pod stays (the target
		// keeps it, or it was attached to).
		Cleanup: func(ctx context.Context) error {
			_ = inW.Close()
			select {
			case <-ended:
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
			}
			cancel()
			<-watching
			return nil
		},
		Where: where,
		Lost:  lost.get,
	}, nil
}

// upload puts the agent at remote in the pod, unless a file with its
// SHA-256 is there already (an attached pod's, or a reused one's), and
// checks what is there afterwards.
func (p *pod) upload(ctx context.Context, local, remote, sum string, reused bool) error {
	where := p.String()
	check := agentbin.HashCommand(remote)
	if !p.created || reused {
		if out, err := p.output(ctx, check, nil); err == nil && strings.HasPrefix(out, sum) {
			return nil
		}
	}
	f, err := os.Open(local)
	if err != nil {
		return fmt.Errorf("kubernetes: the agent: %w", err)
	}
	defer f.Close()
	out, err := p.output(ctx, agentbin.InstallCommand(remote)+" && "+check, f)
	switch {
	case err != nil:
		return fmt.Errorf("kubernetes: %s: bringing the agent in to %s: %w", where, remote, err)
	case strings.HasPrefix(out, agentbin.NoHasher):
		return fmt.Errorf("kubernetes: %s: the image has none of sha256sum, shasum and openssl, to check the agent's SHA-256 with: add one of them (coreutils has sha256sum)", where)
	case !strings.HasPrefix(out, sum):
		return fmt.Errorf("kubernetes: %s: the agent brought in to %s does not have its SHA-256 (%s): %q", where, remote, sum, strings.TrimSpace(out))
	}
	return nil
}

// logOutput is where the plugin logs: its stderr, which go-plugin passes
// to the host's log. logf writes to it.
var (
	logMu     sync.Mutex
	logOutput io.Writer = os.Stderr
)

func logf(format string, args ...any) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(logOutput, format, args...)
}
