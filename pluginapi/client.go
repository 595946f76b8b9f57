package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// MaxRequestBytes bounds one request message on the wire, well under gRPC's
// 4 MiB default. A larger request fails with ErrRequestTooLarge before it is
// sent.
const MaxRequestBytes = 3 << 20

// boundSkew is how much earlier than the client's the plugin's copy of a
// run's bound may run out (it is sent as the time left, and its timer
// starts later).
const boundSkew = 500 * time.Millisecond

// abortSettleMargin is how long, beyond the spec's kill grace, the client
// waits for an aborted Run to settle before it gives up on the plugin.
const abortSettleMargin = 5 * time.Second

// grpcClient is a ShellExecutor backed by a plugin over gRPC.
type grpcClient struct {
	client pb.ShellExecutorClient
	// life is done when the plugin process has exited.
	life context.Context
}

var (
	_ ShellExecutor   = (*grpcClient)(nil)
	_ LiveRunner      = (*grpcClient)(nil)
	_ RequestRunner   = (*grpcClient)(nil)
	_ Configurable    = (*grpcClient)(nil)
	_ SpillReader     = (*grpcClient)(nil)
	_ PartitionCloser = (*grpcClient)(nil)
	_ Releaser        = (*remoteProcess)(nil)
	_ InputWriter     = (*remoteProcess)(nil)
	_ Resizer         = (*remoteProcess)(nil)
)

// NewClient returns a ShellExecutor speaking to a plugin over conn. life is
// done when the plugin is gone; calls in flight then fail with
// ErrPluginUnavailable rather than the caller's context error.
func NewClient(life context.Context, conn grpc.ClientConnInterface) ShellExecutor {
	return &grpcClient{client: pb.NewShellExecutorClient(conn), life: life}
}

// checkWireStrings refuses a partition and environment keys the wire
// cannot carry: they are proto strings, which must be valid UTF-8.
func checkWireStrings(partition string, maps ...map[string]string) error {
	if !utf8.ValidString(partition) {
		return fmt.Errorf("%w: partition %q is not valid UTF-8", ErrInvalidRequest, partition)
	}
	for _, m := range maps {
		for k := range m {
			if !utf8.ValidString(k) {
				return fmt.Errorf("%w: environment key %q is not valid UTF-8", ErrInvalidRequest, k)
			}
		}
	}
	return nil
}

func checkSize(m proto.Message) error {
	if n := proto.Size(m); n > MaxRequestBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrRequestTooLarge, n, MaxRequestBytes)
	}
	return nil
}

func (c *grpcClient) Describe(ctx context.Context) (Description, error) {
	resp, err := c.client.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return Description{}, fromStatus(ctx, err)
	}
	return describeFromProto(resp), nil
}

func (c *grpcClient) Resolve(ctx context.Context, req ExecRequest) (ExecSpec, error) {
	if err := checkWireStrings(req.Partition, req.Env, req.DshEnv); err != nil {
		return ExecSpec{}, err
	}
	msg := &pb.ResolveRequest{Request: requestToProto(req)}
	if err := checkSize(msg); err != nil {
		return ExecSpec{}, err
	}
	resp, err := c.client.Resolve(ctx, msg)
	if err != nil {
		return ExecSpec{}, fromStatus(ctx, err)
	}
	return specFromProto(resp.GetSpec()), nil
}

func (c *grpcClient) Run(ctx context.Context, spec ExecSpec) (RunResult, error) {
	return c.RunLive(ctx, spec, nil)
}

// RunLive runs spec, passing output to onOutput as it comes.
func (c *grpcClient) RunLive(ctx context.Context, spec ExecSpec, onOutput func(Stream, []byte)) (RunResult, error) {
	if err := checkWireStrings(spec.Partition, spec.Env, spec.DshEnv); err != nil {
		return RunResult{}, err
	}
	if err := CheckForeground(spec.Terminal, spec.OpenStdin); err != nil {
		return RunResult{}, err
	}
	return c.runStream(ctx, &pb.RunStart{Spec: specToProto(spec)}, spec.Timeout(), spec.KillGrace(), onOutput)
}

// For a request not yet resolved, the client bounds its wait with these
// stand-ins for the timeout and the kill grace it will get.
const (
	unknownTimeout   = 10 * time.Minute
	unknownKillGrace = time.Minute
)

// RunRequest resolves and runs req in one round trip.
func (c *grpcClient) RunRequest(ctx context.Context, req ExecRequest, onOutput func(Stream, []byte)) (RunResult, error) {
	if err := checkWireStrings(req.Partition, req.Env, req.DshEnv); err != nil {
		return RunResult{}, err
	}
	if err := CheckForeground(req.Terminal, req.OpenStdin); err != nil {
		return RunResult{}, err
	}
	return c.runStream(ctx, &pb.RunStart{Request: requestToProto(req)}, unknownTimeout, unknownKillGrace, onOutput)
}

// runStream runs a command over a Run stream that lives as long as the
// plugin, not as long as ctx: cancelling ctx sends an abort and still waits
// for the settled result, so an aborted run reports what it printed and how
// it died. killGrace bounds, with abortSettleMargin, how long that wait is;
// with timeout too, it bounds the whole run, so a plugin that hangs cannot
// hold the caller forever.
func (c *grpcClient) runStream(ctx context.Context, start *pb.RunStart, timeout, killGrace time.Duration, onOutput func(Stream, []byte)) (RunResult, error) {
	if err := ctx.Err(); err != nil {
		return RunResult{}, fmt.Errorf("%w: %v", ErrAbortedBeforeStart, context.Cause(ctx))
	}
	start.StreamOutput = onOutput != nil
	first := &pb.RunInput{Input: &pb.RunInput_Start{Start: start}}
	if err := checkSize(first); err != nil {
		return RunResult{}, err
	}
	bound := timeout + killGrace + abortSettleMargin
	sctx, cancel := context.WithTimeout(c.life, bound)
	defer cancel()
	stream, err := c.client.Run(sctx)
	if err != nil {
		return RunResult{}, fromStatus(ctx, err)
	}
	if err := stream.Send(first); err != nil {
		return RunResult{}, c.streamErr(ctx, stream)
	}

	var gaveUp sync.Mutex
	var giveUp *time.Timer
	stopAbort := context.AfterFunc(ctx, func() {
		reason := context.Cause(ctx).Error()
		_ = stream.Send(&pb.RunInput{Input: &pb.RunInput_Abort{Abort: &pb.RunAbort{Reason: reason}}})
		gaveUp.Lock()
		giveUp = time.AfterFunc(killGrace+abortSettleMargin, cancel)
		gaveUp.Unlock()
	})
	defer func() {
		stopAbort()
		gaveUp.Lock()
		if giveUp != nil {
			giveUp.Stop()
		}
		gaveUp.Unlock()
	}()

	for {
		ev, err := stream.Recv()
		if err != nil {
			if dl, ok := sctx.Deadline(); ok && sctx.Err() == nil && c.life.Err() == nil && time.Until(dl) < boundSkew {
				// The plugin's copy of the deadline (sent as the time
				// left) ran out a moment before this side's: the bound,
				// not the plugin, ended the run.
				<-sctx.Done()
			}
			if sctx.Err() != nil && c.life.Err() == nil {
				if errors.Is(sctx.Err(), context.DeadlineExceeded) {
					return RunResult{}, fmt.Errorf("%w: the command did not settle within %s", ErrPluginUnavailable, bound)
				}
				if ctx.Err() != nil {
					return RunResult{}, fmt.Errorf("%w: the command did not settle within %s of the abort",
						ErrPluginUnavailable, killGrace+abortSettleMargin)
				}
			}
			if errors.Is(err, io.EOF) {
				return RunResult{}, fmt.Errorf("%w: Run stream ended without a result", ErrPluginUnavailable)
			}
			return RunResult{}, fromStatus(context.WithoutCancel(ctx), err)
		}
		switch e := ev.GetEvent().(type) {
		case *pb.RunEvent_Output:
			if onOutput != nil {
				onOutput(streamFromProto(e.Output.GetStream()), e.Output.GetData())
			}
		case *pb.RunEvent_Result:
			if e.Result == nil {
				return RunResult{}, fmt.Errorf("%w: the plugin sent an empty result", ErrPluginUnavailable)
			}
			return resultFromProto(e.Result), nil
		}
	}
}

// streamErr reads the status a stream ended with after a failed Send.
func (c *grpcClient) streamErr(ctx context.Context, stream grpc.BidiStreamingClient[pb.RunInput, pb.RunEvent]) error {
	_, err := stream.Recv()
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: Run stream closed", ErrPluginUnavailable)
	}
	return fromStatus(ctx, err)
}

func (c *grpcClient) Start(ctx context.Context, spec ExecSpec) (ShellProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrAbortedBeforeStart, context.Cause(ctx))
	}
	if err := checkWireStrings(spec.Partition, spec.Env, spec.DshEnv); err != nil {
		return nil, err
	}
	msg := &pb.StartRequest{Spec: specToProto(spec)}
	if err := checkSize(msg); err != nil {
		return nil, err
	}
	resp, err := c.client.Start(ctx, msg)
	if err != nil {
		return nil, fromStatus(ctx, err)
	}
	p := &remoteProcess{c: c, id: resp.GetProcessId(), done: make(chan struct{}),
		spill: [2]string{resp.GetStdoutSpillPath(), resp.GetStderrSpillPath()}}
	go p.watch(ctx)
	return p, nil
}

func (c *grpcClient) Configure(ctx context.Context, settings []byte) error {
	msg := &pb.ConfigureRequest{SettingsJson: settings}
	if err := checkSize(msg); err != nil {
		return err
	}
	if _, err := c.client.Configure(ctx, msg); err != nil {
		return fromStatus(ctx, err)
	}
	return nil
}

func (c *grpcClient) ReadSpill(ctx context.Context, path string, offset int64, max int) (SpillChunk, error) {
	resp, err := c.client.ReadSpill(ctx, &pb.ReadSpillRequest{Path: []byte(path), Offset: offset, MaxBytes: int64(max)})
	if err != nil {
		return SpillChunk{}, fromStatus(ctx, err)
	}
	return SpillChunk{Data: resp.GetData(), Size: resp.GetSize()}, nil
}

// ClosePartition ends partition in the plugin. A plugin built before the
// call existed has no partitions to end: its "unimplemented" is success.
func (c *grpcClient) ClosePartition(ctx context.Context, partition string) error {
	if !utf8.ValidString(partition) {
		return fmt.Errorf("%w: partition %q is not valid UTF-8", ErrInvalidRequest, partition)
	}
	if _, err := c.client.ClosePartition(ctx, &pb.ClosePartitionRequest{Partition: partition}); err != nil {
		if status.Code(err) == codes.Unimplemented {
			return nil
		}
		return fromStatus(ctx, err)
	}
	return nil
}

func (c *grpcClient) Close(ctx context.Context) error {
	if _, err := c.client.Close(ctx, &pb.CloseRequest{}); err != nil {
		return fromStatus(ctx, err)
	}
	return nil
}

// remoteProcess is a background process living in the plugin. One Wait call
// per process runs for as long as the process does; local Waits read its
// outcome.
type remoteProcess struct {
	c    *grpcClient
	id   string
	done chan struct{}
	exit ProcessExit
	// spill names the spill files, as Start said ("" when it did not).
	spill [2]string
}

var _ SpillNamer = (*remoteProcess)(nil)

// killTimeout bounds the Kill sent when a Start's ctx is cancelled.
const killTimeout = 30 * time.Second

// watch waits for the process to finish, and kills it if ctx (the Start
// call's) is cancelled first.
func (p *remoteProcess) watch(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		kctx, cancel := context.WithTimeout(p.c.life, killTimeout)
		defer cancel()
		_, _ = p.c.client.Kill(kctx, &pb.KillRequest{ProcessId: p.id, Reason: context.Cause(ctx).Error()})
	})
	defer stop()
	resp, err := p.c.client.Wait(p.c.life, &pb.WaitRequest{ProcessId: p.id})
	switch {
	case err != nil:
		// Not p.c.life: once the plugin is gone it is done, and the reason
		// would read "context canceled".
		p.exit = ProcessExit{Killed: true, KillReason: fromStatus(context.Background(), err).Error()}
	case resp.GetExit() == nil:
		p.exit = ProcessExit{Killed: true, KillReason: "the plugin sent no exit facts"}
	default:
		p.exit = exitFromProto(resp.GetExit())
	}
	close(p.done)
}

func (p *remoteProcess) ID() string { return p.id }

func (p *remoteProcess) Kill(ctx context.Context) (bool, error) {
	select {
	case <-p.done:
		return false, nil
	default:
	}
	resp, err := p.c.client.Kill(ctx, &pb.KillRequest{ProcessId: p.id, Reason: "killed by the caller"})
	if err != nil {
		select {
		case <-p.done:
			return false, nil
		default:
		}
		return false, fromStatus(ctx, err)
	}
	return resp.GetKilled(), nil
}

func (p *remoteProcess) ReadOutput(ctx context.Context) (OutputRead, error) {
	resp, err := p.c.client.ReadOutput(ctx, &pb.ReadOutputRequest{ProcessId: p.id})
	if err != nil {
		return OutputRead{}, fromStatus(ctx, err)
	}
	r := OutputRead{
		Delta: stringOwning(resp.GetDelta()), Lossy: resp.GetLossy(), // resp is ours alone, and dropped
		StdoutSpillPath: resp.GetStdoutSpillPath(), StderrSpillPath: resp.GetStderrSpillPath(),
	}
	if e := resp.GetEnds(); e != nil {
		r.Ends = &StreamEnds{Stdout: e.GetStdout(), Stderr: e.GetStderr()}
	}
	r.WaitingForInput = resp.GetWaitingForInput()
	return r, nil
}

// WriteInput writes data to the process's input in the plugin. A plugin
// built before the call does not offer input: ErrUnsupported.
func (p *remoteProcess) WriteInput(ctx context.Context, data []byte, closeStdin bool) error {
	msg := &pb.WriteInputRequest{ProcessId: p.id, Data: data, CloseStdin: closeStdin}
	if err := checkSize(msg); err != nil {
		return err
	}
	if _, err := p.c.client.WriteInput(ctx, msg); err != nil {
		return olderPlugin(ctx, err, "input to a running command (WriteInput)")
	}
	return nil
}

// Resize sets the size of the process's terminal in the plugin. A plugin
// built before the call does not offer terminals: ErrUnsupported.
func (p *remoteProcess) Resize(ctx context.Context, rows, cols int) error {
	if err := CheckTerminalSize(rows, cols); err != nil {
		return err
	}
	if _, err := p.c.client.Resize(ctx, &pb.ResizeRequest{ProcessId: p.id, Rows: uint32(rows), Cols: uint32(cols)}); err != nil {
		return olderPlugin(ctx, err, "terminals (Resize)")
	}
	return nil
}

// olderPlugin is fromStatus, saying for a plugin that does not know the
// call (built before it was in the contract) that it does not offer what.
func olderPlugin(ctx context.Context, err error, what string) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unimplemented && len(st.Details()) == 0 {
		return &remoteError{
			msg:      "pluginapi: not supported by this executor: the plugin does not support " + what + " (built before shellexec terminals and input)",
			sentinel: ErrUnsupported,
		}
	}
	return fromStatus(ctx, err)
}

// SpillPaths names the spill files the plugin named when the process
// started: "" for each it did not.
func (p *remoteProcess) SpillPaths() (stdout, stderr string) { return p.spill[0], p.spill[1] }

// Release forgets the finished process in the plugin.
func (p *remoteProcess) Release(ctx context.Context) error {
	if _, err := p.c.client.Release(ctx, &pb.ReleaseRequest{ProcessId: p.id}); err != nil {
		return fromStatus(ctx, err)
	}
	return nil
}

func (p *remoteProcess) Wait(ctx context.Context) (ProcessExit, error) {
	select {
	case <-p.done:
		return p.exit, nil
	case <-ctx.Done():
		return ProcessExit{}, ctx.Err()
	}
}
