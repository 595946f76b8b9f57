package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// outputChunkBytes bounds the data of one OutputChunk, far below any gRPC
// message limit.
const outputChunkBytes = 64 << 10

// errHostGone is the abort cause when the host's end of a Run stream breaks.
var errHostGone = errors.New("connection to the host was lost")

// grpcServer serves a ShellExecutor implementation over gRPC.
type grpcServer struct {
	pb.UnimplementedShellExecutorServer
	impl ShellExecutor
	// life bounds the background processes started through this server:
	// they outlive the Start call, not the server.
	life context.Context

	mu    sync.Mutex
	procs map[string]ShellProcess
}

func newGRPCServer(life context.Context, impl ShellExecutor) *grpcServer {
	return &grpcServer{impl: impl, life: life, procs: map[string]ShellProcess{}}
}

func (s *grpcServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return describeToProto(d), nil
}

func (s *grpcServer) Resolve(ctx context.Context, req *pb.ResolveRequest) (*pb.ResolveResponse, error) {
	spec, err := s.impl.Resolve(ctx, requestFromProto(req.GetRequest()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.ResolveResponse{Spec: specToProto(spec)}, nil
}

// abortCause is the cause a host's RunAbort carries into the command's ctx.
type abortCause struct{ reason string }

func (a *abortCause) Error() string { return a.reason }

func (s *grpcServer) Run(stream pb.ShellExecutor_RunServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return status.Error(codes.InvalidArgument, "pluginapi: a Run stream must open with a start message")
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	go func() {
		for {
			in, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					cancel(errHostGone)
				}
				return
			}
			if a := in.GetAbort(); a != nil {
				reason := a.GetReason()
				if reason == "" {
					reason = "aborted by the caller"
				}
				cancel(&abortCause{reason: reason})
			}
		}
	}()

	var spec ExecSpec
	if req := start.GetRequest(); req != nil {
		if spec, err = s.impl.Resolve(ctx, requestFromProto(req)); err != nil {
			return toStatus(err)
		}
	} else {
		spec = specFromProto(start.GetSpec())
	}
	if err := CheckForeground(spec.Terminal, spec.OpenStdin); err != nil {
		return toStatus(err)
	}
	var res RunResult
	var sendMu sync.Mutex
	var sendErr error
	returned := false
	onOutput := func(st Stream, data []byte) {
		sendMu.Lock()
		defer sendMu.Unlock()
		for len(data) > 0 && sendErr == nil && !returned {
			n := min(len(data), outputChunkBytes)
			sendErr = stream.Send(&pb.RunEvent{Event: &pb.RunEvent_Output{
				Output: &pb.OutputChunk{Stream: streamToProto(st), Data: data[:n]},
			}})
			data = data[n:]
		}
	}
	live, isLive := s.impl.(LiveRunner)
	switch {
	case start.GetStreamOutput() && isLive:
		res, err = live.RunLive(ctx, spec, onOutput)
	default:
		res, err = s.impl.Run(ctx, spec)
		if err == nil && start.GetStreamOutput() {
			// An executor that cannot report output as it comes still
			// shows it to a caller who asked for it: the collected text,
			// at the end, as RunRequest gives it in process.
			onOutput(Stdout, []byte(res.Stdout.Text))
			onOutput(Stderr, []byte(res.Stderr.Text))
		}
	}
	sendMu.Lock()
	returned = true
	sendMu.Unlock()
	if err != nil {
		return toStatus(err)
	}
	return stream.Send(&pb.RunEvent{Event: &pb.RunEvent_Result{Result: resultToProto(res)}})
}

func (s *grpcServer) Start(ctx context.Context, req *pb.StartRequest) (*pb.StartResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, toStatus(fmt.Errorf("%w: %v", ErrAbortedBeforeStart, err))
	}
	spec := specFromProto(req.GetSpec())
	if spec.Interactive() {
		// An executor that does not say it offers them would run the
		// command without: refused, as a host refuses it.
		d, err := s.impl.Describe(ctx)
		if err != nil {
			return nil, toStatus(err)
		}
		if err := CheckOffers(d, ExecRequest{Terminal: spec.Terminal, OpenStdin: spec.OpenStdin}); err != nil {
			return nil, toStatus(err)
		}
	}
	proc, err := s.impl.Start(s.life, spec)
	if err != nil {
		return nil, toStatus(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.procs[proc.ID()]; dup {
		_, _ = proc.Kill(ctx)
		return nil, status.Errorf(codes.Internal, "pluginapi: executor reused process id %q", proc.ID())
	}
	s.procs[proc.ID()] = proc
	resp := &pb.StartResponse{ProcessId: proc.ID()}
	if sn, ok := proc.(SpillNamer); ok {
		resp.StdoutSpillPath, resp.StderrSpillPath = sn.SpillPaths()
	}
	return resp, nil
}

func (s *grpcServer) process(id string) (ShellProcess, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[id]
	if !ok {
		return nil, toStatus(fmt.Errorf("%w: %q", ErrUnknownProcess, id))
	}
	return p, nil
}

func (s *grpcServer) ReadOutput(ctx context.Context, req *pb.ReadOutputRequest) (*pb.ReadOutputResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	r, err := p.ReadOutput(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &pb.ReadOutputResponse{
		Delta: bytesOf(r.Delta), Lossy: r.Lossy, // only marshalled from here
		StdoutSpillPath: r.StdoutSpillPath, StderrSpillPath: r.StderrSpillPath,
	}
	if r.Ends != nil {
		resp.Ends = &pb.StreamEnds{Stdout: r.Ends.Stdout, Stderr: r.Ends.Stderr}
	}
	resp.WaitingForInput = r.WaitingForInput
	return resp, nil
}

func (s *grpcServer) WriteInput(ctx context.Context, req *pb.WriteInputRequest) (*pb.WriteInputResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := WriteInput(ctx, p, req.GetData(), req.GetCloseStdin()); err != nil {
		return nil, toStatus(err)
	}
	return &pb.WriteInputResponse{}, nil
}

func (s *grpcServer) Resize(ctx context.Context, req *pb.ResizeRequest) (*pb.ResizeResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	if err := Resize(ctx, p, sizeFromProto(req.GetRows()), sizeFromProto(req.GetCols())); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ResizeResponse{}, nil
}

func (s *grpcServer) Kill(ctx context.Context, req *pb.KillRequest) (*pb.KillResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	killed, err := p.Kill(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.KillResponse{Killed: killed}, nil
}

func (s *grpcServer) Wait(ctx context.Context, req *pb.WaitRequest) (*pb.WaitResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	exit, err := p.Wait(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &pb.WaitResponse{Exit: exitToProto(exit)}, nil
}

func (s *grpcServer) Close(ctx context.Context, _ *pb.CloseRequest) (*pb.CloseResponse, error) {
	if err := s.impl.Close(ctx); err != nil {
		return nil, toStatus(err)
	}
	return &pb.CloseResponse{}, nil
}

func (s *grpcServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	settings := req.GetSettingsJson()
	c, ok := s.impl.(Configurable)
	if !ok {
		if trimmed := strings.TrimSpace(string(settings)); trimmed != "" && trimmed != "{}" && trimmed != "null" {
			return nil, toStatus(fmt.Errorf("%w: this executor takes no settings", ErrInvalidSettings))
		}
		return &pb.ConfigureResponse{}, nil
	}
	if err := c.Configure(ctx, settings); err != nil {
		return nil, toStatus(err)
	}
	return &pb.ConfigureResponse{}, nil
}

func (s *grpcServer) Release(ctx context.Context, req *pb.ReleaseRequest) (*pb.ReleaseResponse, error) {
	p, err := s.process(req.GetProcessId())
	if err != nil {
		return nil, err
	}
	if !finished(ctx, p) {
		return nil, toStatus(fmt.Errorf("%w: process %q is still running", ErrInvalidRequest, req.GetProcessId()))
	}
	if r, ok := p.(Releaser); ok {
		if err := r.Release(ctx); err != nil {
			return nil, toStatus(err)
		}
	}
	s.mu.Lock()
	delete(s.procs, req.GetProcessId())
	s.mu.Unlock()
	return &pb.ReleaseResponse{}, nil
}

func (s *grpcServer) ReadSpill(ctx context.Context, req *pb.ReadSpillRequest) (*pb.ReadSpillResponse, error) {
	r, ok := s.impl.(SpillReader)
	if !ok {
		return nil, toStatus(fmt.Errorf("%w: it reads no spill files (pluginapi.SpillReader)", ErrUnsupported))
	}
	if req.GetOffset() < 0 || req.GetMaxBytes() < 0 {
		return nil, toStatus(fmt.Errorf("%w: ReadSpill needs an offset and a size of 0 or more", ErrInvalidRequest))
	}
	chunk, err := r.ReadSpill(ctx, string(req.GetPath()), req.GetOffset(), int(min(req.GetMaxBytes(), MaxSpillRead)))
	if err != nil {
		return nil, toStatus(err)
	}
	if len(chunk.Data) > MaxSpillRead {
		chunk.Data = chunk.Data[:MaxSpillRead]
	}
	return &pb.ReadSpillResponse{Data: chunk.Data, Size: chunk.Size}, nil
}

// ClosePartition ends a partition in an executor that partitions; one that
// does not has nothing to end.
func (s *grpcServer) ClosePartition(ctx context.Context, req *pb.ClosePartitionRequest) (*pb.ClosePartitionResponse, error) {
	if pc, ok := s.impl.(PartitionCloser); ok {
		if err := pc.ClosePartition(ctx, req.GetPartition()); err != nil {
			return nil, toStatus(err)
		}
	}
	return &pb.ClosePartitionResponse{}, nil
}

// finishedWithin is how long finished waits for a process's Wait: one that
// has finished answers at once.
const finishedWithin = 50 * time.Millisecond

// finished reports whether p has finished.
func finished(ctx context.Context, p ShellProcess) bool {
	ctx, cancel := context.WithTimeout(ctx, finishedWithin)
	defer cancel()
	_, err := p.Wait(ctx)
	return err == nil
}
