package pluginapi

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// idleExecutor starts processes that do nothing until killed, and says in
// Describe that it offers neither terminals nor input.
type idleExecutor struct {
	ShellExecutor // nothing else is called
	started       int
}

func (x *idleExecutor) Describe(context.Context) (Description, error) {
	return Description{Name: "idle"}, nil
}

func (x *idleExecutor) Start(ctx context.Context, spec ExecSpec) (ShellProcess, error) {
	x.started++
	return &idleProcess{done: make(chan struct{})}, nil
}

func (x *idleExecutor) Close(context.Context) error { return nil }

type idleProcess struct{ done chan struct{} }

func (p *idleProcess) ID() string { return "p1" }
func (p *idleProcess) Kill(context.Context) (bool, error) {
	select {
	case <-p.done:
		return false, nil
	default:
		close(p.done)
		return true, nil
	}
}
func (p *idleProcess) ReadOutput(context.Context) (OutputRead, error) { return OutputRead{}, nil }
func (p *idleProcess) Wait(ctx context.Context) (ProcessExit, error) {
	select {
	case <-p.done:
		return ProcessExit{Killed: true}, nil
	case <-ctx.Done():
		return ProcessExit{}, ctx.Err()
	}
}

// serveDesc serves impl over a real gRPC connection with the service
// descriptor desc, and returns a client for it.
func serveDesc(t *testing.T, impl ShellExecutor, desc *grpc.ServiceDesc) (ShellExecutor, *grpc.ClientConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pit")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	life, stopLife := context.WithCancel(context.Background())
	srv.RegisterService(desc, newGRPCServer(life, impl))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	connLife, stopConn := context.WithCancel(context.Background())
	t.Cleanup(func() {
		stopConn()
		_ = conn.Close()
		srv.Stop()
		<-served
		stopLife()
		_ = os.RemoveAll(dir)
	})
	return NewClient(connLife, conn), conn
}

// olderDesc is the service as a plugin built before terminals and input
// serves it: without WriteInput and Resize.
func olderDesc() *grpc.ServiceDesc {
	d := pb.ShellExecutor_ServiceDesc
	d.Methods = nil
	for _, m := range pb.ShellExecutor_ServiceDesc.Methods {
		if m.MethodName != "WriteInput" && m.MethodName != "Resize" {
			d.Methods = append(d.Methods, m)
		}
	}
	return &d
}

// A plugin built before WriteInput and Resize answers them "unimplemented":
// the client says, with ErrUnsupported, that the plugin does not offer
// them, not a bare transport code.
func TestAnOlderPluginRefusesInputClearly(t *testing.T) {
	x := &idleExecutor{}
	client, _ := serveDesc(t, x, olderDesc())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := client.Start(ctx, ExecSpec{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(ctx)
	err = WriteInput(ctx, p, []byte("y\n"), false)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "does not support input to a running command") ||
		!strings.Contains(err.Error(), "built before") {
		t.Errorf("WriteInput to an older plugin: %v; want ErrUnsupported saying it does not support input, built before", err)
	}
	err = Resize(ctx, p, 30, 100)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "does not support terminals") {
		t.Errorf("Resize on an older plugin: %v; want ErrUnsupported saying it does not support terminals", err)
	}
}

// The server refuses a terminal or an open stdin to an executor whose
// Describe does not offer them, before its Start runs (it would run the
// command without them), and a process that is no InputWriter or Resizer
// refuses input and resizing with ErrUnsupported.
func TestTheServerRefusesWhatTheExecutorDoesNotOffer(t *testing.T) {
	x := &idleExecutor{}
	client, _ := serveDesc(t, x, &pb.ShellExecutor_ServiceDesc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		spec ExecSpec
		want string
	}{
		{ExecSpec{Command: "bash", Terminal: &Terminal{Rows: 24, Cols: 80}, OpenStdin: true}, `executor "idle" does not support terminals`},
		{ExecSpec{Command: "cat", OpenStdin: true}, `executor "idle" does not support input to a running command`},
	} {
		if _, err := client.Start(ctx, tc.spec); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v): %v; want ErrUnsupported saying %q", tc.spec, err, tc.want)
		}
	}
	if x.started != 0 {
		t.Errorf("the executor's Start ran %d times for what it does not offer", x.started)
	}
	p, err := client.Start(ctx, ExecSpec{Command: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill(ctx)
	if err := WriteInput(ctx, p, []byte("y"), false); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "takes no input") {
		t.Errorf("WriteInput to a process that takes none: %v; want ErrUnsupported saying it takes no input", err)
	}
	if err := Resize(ctx, p, 10, 10); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "no terminal") {
		t.Errorf("Resize of a process without a terminal: %v; want ErrUnsupported saying it has none", err)
	}
	if err := Resize(ctx, p, 0, 10); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("Resize to 0 rows: %v; want ErrInvalidRequest", err)
	}
}

// Run refuses a terminal and an open stdin, on both sides of the wire:
// the client before it sends (an older plugin would run the command
// without them), and the server for a client that sent them all the same.
func TestRunRefusesATerminalAndAnOpenStdin(t *testing.T) {
	x := &idleExecutor{}
	client, conn := serveDesc(t, x, &pb.ShellExecutor_ServiceDesc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, spec := range []ExecSpec{
		{Command: "bash", Terminal: &Terminal{Rows: 24, Cols: 80}, KillGraceMs: 1, TimeoutMs: 1},
		{Command: "cat", OpenStdin: true, KillGraceMs: 1, TimeoutMs: 1},
	} {
		if _, err := client.Run(ctx, spec); !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), "not Run") {
			t.Errorf("client Run(%+v): %v; want ErrInvalidRequest", spec, err)
		}
		if _, err := client.(RequestRunner).RunRequest(ctx, ExecRequest{Command: spec.Command, Terminal: spec.Terminal, OpenStdin: spec.OpenStdin}, nil); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("client RunRequest(%+v): %v; want ErrInvalidRequest", spec, err)
		}
		// What a client that does not check sends.
		stream, err := pb.NewShellExecutorClient(conn).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&pb.RunInput{Input: &pb.RunInput_Start{Start: &pb.RunStart{Spec: specToProto(spec)}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); !errors.Is(fromStatus(ctx, err), ErrInvalidRequest) {
			t.Errorf("server Run(%+v): %v; want ErrInvalidRequest", spec, err)
		}
	}
}
