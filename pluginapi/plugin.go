package pluginapi

import (
	"context"
	"crypto/tls"
	"os"
	"os/signal"
	"syscall"
	"time"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the go-plugin protocol version of shellexec.v1.
const ProtocolVersion = 1

// PluginName is the name the shell executor plugin is dispensed under.
const PluginName = "shell"

// BuiltinServeVar names, in the environment of a program a host launched
// as one of its built-in executors (the host's own binary, or a program
// embedding it, run again with the arguments "plugin serve NAME"), the
// executor to serve. Its presence tells that program's main to serve, not
// to start over; and a host refuses to launch executors from a process
// that has it.
const BuiltinServeVar = "DSH_SERVE_BUILTIN"

// HostSpillDirVar names, in a plugin's environment, a directory of its
// host's (the host's spill files) that the plugin removes when the host
// dies, after it has terminated what it ran: the host cannot remove it
// then. Serve takes it out of the environment, so no command inherits it.
const HostSpillDirVar = "DSH_HOST_SPILL_DIR"

// Handshake is the go-plugin handshake between a dsh-host and an executor.
// The cookie is not a secret: it stops a user from running a plugin binary
// by hand and wondering why it prints a handshake line.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "DSH_SHELL_EXECUTOR_PLUGIN",
	MagicCookieValue: "b9e3d2f4-6a1c-4f0e-9d57-shellexec-v1",
}

// PluginSets is the versioned plugin set a host passes to go-plugin: one
// entry per protocol version it speaks.
func PluginSets() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &ShellPlugin{}},
	}
}

// ShellPlugin is the go-plugin glue for a ShellExecutor over gRPC. Hosts use
// it with a nil Impl; Serve fills Impl in the plugin process.
type ShellPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl ShellExecutor
	// Life bounds background processes started through the server side.
	Life context.Context
}

var _ plugin.GRPCPlugin = (*ShellPlugin)(nil)

// GRPCServer registers the executor on the plugin's gRPC server.
func (p *ShellPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	life := p.Life
	if life == nil {
		life = context.Background()
	}
	pb.RegisterShellExecutorServer(s, newGRPCServer(life, p.Impl))
	return nil
}

// GRPCClient returns a ShellExecutor that calls the plugin. ctx is done when
// the plugin process exits.
func (p *ShellPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return NewClient(ctx, conn), nil
}

// parentPollInterval is how often a plugin checks that its host is alive.
const parentPollInterval = 200 * time.Millisecond

// hostGoneReason is why a plugin whose host died stops.
const hostGoneReason = "host process is gone"

// closeTimeout bounds the Close a plugin runs on its executor when it stops.
const closeTimeout = 30 * time.Second

// Serve runs impl as a shell executor plugin, speaking the handshake on
// stdout; call it from main. Nothing may write to stdout before it. When the
// host shuts the plugin down, or the host process dies, Serve closes impl
// (terminating everything it still runs) and returns.
func Serve(impl ShellExecutor) {
	logger := hclog.New(&hclog.LoggerOptions{
		Name: "executor", Output: os.Stderr, JSONFormat: true, Level: hclog.Info,
	})
	// First, before anything could start a process that inherits the
	// descriptor.
	tlsConfig, tlsErr := serverTLS()
	if err := detachStdin(); err != nil {
		logger.Warn("the plugin's stdin is still its host's", "error", err)
	}
	hostSpill := os.Getenv(HostSpillDirVar)
	_ = os.Unsetenv(HostSpillDirVar)
	life, stop := context.WithCancel(context.Background())
	defer stop()
	// When the host dies, the pipes to it break. A write to a broken stdout
	// or stderr must fail with EPIPE, not kill the plugin with SIGPIPE
	// before it has terminated what it started. (Notify, not Ignore: an
	// ignored signal would stay ignored in every command.)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// SIGTERM sent to the plugin itself: terminate what it runs, then exit.
	terminate := make(chan os.Signal, 1)
	signal.Notify(terminate, syscall.SIGTERM)

	hostPID := os.Getppid()
	hostGone := make(chan struct{})
	go func() {
		t := time.NewTicker(parentPollInterval)
		defer t.Stop()
		for {
			select {
			case <-life.Done():
				return
			case <-t.C:
				if os.Getppid() != hostPID {
					close(hostGone)
					return
				}
			}
		}
	}()
	go func() {
		why := hostGoneReason
		select {
		case <-hostGone:
		case <-terminate:
			why = "received SIGTERM"
		case <-life.Done():
			return
		}
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		err := impl.Close(ctx)
		cancel()
		logger.Warn(why+"; terminated every process", "error", err)
		if dir := os.Getenv(plugin.EnvUnixSocketDir); dir != "" && why == hostGoneReason {
			_ = os.RemoveAll(dir) // the host made it, and cannot remove it now
		}
		if hostSpill != "" && why == hostGoneReason {
			_ = os.RemoveAll(hostSpill) // the host's, as the socket's
		}
		os.Exit(1)
	}()

	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			ProtocolVersion: {PluginName: &ShellPlugin{Impl: impl, Life: life}},
		},
		GRPCServer:  plugin.DefaultGRPCServer,
		TLSProvider: func() (*tls.Config, error) { return tlsConfig, tlsErr },
		Logger:      logger,
	})
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := impl.Close(ctx); err != nil {
		logger.Error("closing the executor", "error", err)
	}
}
