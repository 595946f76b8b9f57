package pluginapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

var sentinels = []error{
	ErrUnusableWorkdir, ErrMissingShell, ErrAbortedBeforeStart, ErrSpecNotResolved, ErrInvalidRequest,
	ErrInvalidSettings, ErrRequestTooLarge, ErrUnknownProcess, ErrExecutorClosed, ErrPluginUnavailable,
	ErrNotASpill, ErrUnsupported, ErrInputClosed,
}

// TestSentinelsCrossTheWire: a wrapped sentinel keeps its identity and its
// exact message through toStatus and fromStatus, also after the status has
// been marshalled as it is on the wire.
func TestSentinelsCrossTheWire(t *testing.T) {
	if len(sentinels) != len(wireErrors) {
		t.Fatalf("test lists %d sentinels, wireErrors has %d", len(sentinels), len(wireErrors))
	}
	for _, sentinel := range sentinels {
		t.Run(sentinel.Error(), func(t *testing.T) {
			orig := fmt.Errorf("%w: /some/dir", sentinel)
			wire := toStatus(orig)
			st, ok := status.FromError(wire)
			if !ok {
				t.Fatalf("toStatus(%v) = %v, not a gRPC status", orig, wire)
			}
			if st.Code() == codes.Unknown || st.Code() == codes.OK {
				t.Errorf("toStatus(%v) has code %v", orig, st.Code())
			}
			// Through the bytes of the status, as a real transport carries it.
			raw, err := proto.Marshal(st.Proto())
			if err != nil {
				t.Fatalf("marshal status: %v", err)
			}
			var decoded = st.Proto()
			proto.Reset(decoded)
			if err := proto.Unmarshal(raw, decoded); err != nil {
				t.Fatalf("unmarshal status: %v", err)
			}
			for name, in := range map[string]error{"in process": wire, "marshalled": status.FromProto(decoded).Err()} {
				got := fromStatus(context.Background(), in)
				if !errors.Is(got, sentinel) {
					t.Errorf("%s: errors.Is(%v, %v) = false", name, got, sentinel)
				}
				for _, other := range sentinels {
					if other != sentinel && errors.Is(got, other) {
						t.Errorf("%s: %v also matches %v", name, got, other)
					}
				}
				if got.Error() != orig.Error() {
					t.Errorf("%s: message %q, want %q", name, got.Error(), orig.Error())
				}
			}
		})
	}
}

// A sentinel's identity survives even when the caller's context is done.
func TestSentinelWinsOverCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	orig := fmt.Errorf("%w: context canceled", ErrAbortedBeforeStart)
	got := fromStatus(ctx, toStatus(orig))
	if !errors.Is(got, ErrAbortedBeforeStart) || got.Error() != orig.Error() {
		t.Errorf("fromStatus = %v, want %v", got, orig)
	}
}

func TestStatusUnknownError(t *testing.T) {
	orig := errors.New("something odd: disk on fire")
	wire := toStatus(orig)
	if c := status.Code(wire); c != codes.Unknown {
		t.Errorf("code = %v, want Unknown", c)
	}
	got := fromStatus(context.Background(), wire)
	if got.Error() != orig.Error() {
		t.Errorf("message = %q, want %q", got.Error(), orig.Error())
	}
	for _, s := range sentinels {
		if errors.Is(got, s) {
			t.Errorf("unknown error became %v", s)
		}
	}
}

func TestStatusNil(t *testing.T) {
	if err := toStatus(nil); err != nil {
		t.Errorf("toStatus(nil) = %v", err)
	}
	if err := fromStatus(context.Background(), nil); err != nil {
		t.Errorf("fromStatus(nil) = %v", err)
	}
}

// A status error passes through toStatus untouched; a plain error passes
// through fromStatus untouched.
func TestStatusPassThrough(t *testing.T) {
	in := status.Error(codes.PermissionDenied, "nope")
	if got := toStatus(in); got != in {
		t.Errorf("toStatus(status) = %v, want it unchanged", got)
	}
	plain := errors.New("plain")
	if got := fromStatus(context.Background(), plain); got != plain {
		t.Errorf("fromStatus(plain) = %v, want it unchanged", got)
	}
}

func TestFromStatusByCode(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	<-expired.Done()

	tests := []struct {
		name     string
		ctx      context.Context
		in       error
		sentinel error // nil: none of ours
		wantErr  error // when set, errors.Is(got, wantErr) and got == wantErr
		contains string
	}{
		{"unavailable", live, status.Error(codes.Unavailable, "connection refused"), ErrPluginUnavailable, nil, "connection refused"},
		{"unavailable with cancelled ctx", cancelled, status.Error(codes.Unavailable, "eof"), ErrPluginUnavailable, nil, "eof"},
		{"resource exhausted", live, status.Error(codes.ResourceExhausted, "message larger than max"), ErrRequestTooLarge, nil, "message larger than max"},
		{"canceled, caller cancelled", cancelled, status.Error(codes.Canceled, "context canceled"), nil, context.Canceled, ""},
		{"deadline, caller expired", expired, status.Error(codes.DeadlineExceeded, "deadline"), nil, context.DeadlineExceeded, ""},
		{"canceled, caller still live", live, status.Error(codes.Canceled, "stream reset"), ErrPluginUnavailable, nil, "stream reset"},
		{"internal", live, status.Error(codes.Internal, "boom"), nil, nil, "boom"},
		{"foreign error info is ignored", live, withInfo(t, codes.Internal, "x", "UNUSABLE_WORKDIR", "other.domain"), nil, nil, "x"},
		{"unknown reason in our domain", live, withInfo(t, codes.Internal, "y", "NO_SUCH_REASON", errorDomain), nil, nil, "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromStatus(tt.ctx, tt.in)
			if got == nil {
				t.Fatal("fromStatus returned nil")
			}
			if tt.wantErr != nil {
				if got != tt.wantErr {
					t.Errorf("fromStatus = %v, want the context's error %v", got, tt.wantErr)
				}
				return
			}
			for _, s := range sentinels {
				if want := s == tt.sentinel; errors.Is(got, s) != want {
					t.Errorf("errors.Is(%v, %v) = %v, want %v", got, s, !want, want)
				}
			}
			if tt.contains != "" && !strings.Contains(got.Error(), tt.contains) {
				t.Errorf("message %q does not contain %q", got.Error(), tt.contains)
			}
			if tt.sentinel == nil && got.Error() != tt.contains {
				t.Errorf("message %q, want exactly %q", got.Error(), tt.contains)
			}
		})
	}
}

func TestToStatusContextErrors(t *testing.T) {
	tests := []struct {
		err  error
		code codes.Code
	}{
		{context.Canceled, codes.Canceled},
		{fmt.Errorf("run: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{fmt.Errorf("%w: %w", ErrAbortedBeforeStart, context.Canceled), codes.Canceled},
		{fmt.Errorf("%w: x", ErrUnusableWorkdir), codes.FailedPrecondition},
		{fmt.Errorf("%w: x", ErrInvalidRequest), codes.InvalidArgument},
		{fmt.Errorf("%w: x", ErrUnknownProcess), codes.NotFound},
		{fmt.Errorf("%w: x", ErrRequestTooLarge), codes.ResourceExhausted},
		{fmt.Errorf("%w: x", ErrPluginUnavailable), codes.Unavailable},
	}
	for _, tt := range tests {
		t.Run(tt.err.Error(), func(t *testing.T) {
			if got := status.Code(toStatus(tt.err)); got != tt.code {
				t.Errorf("code = %v, want %v", got, tt.code)
			}
			if got := status.Convert(toStatus(tt.err)).Message(); got != tt.err.Error() {
				t.Errorf("message = %q, want %q", got, tt.err.Error())
			}
		})
	}
}

// withInfo builds a status error carrying an ErrorInfo detail.
func withInfo(t *testing.T, code codes.Code, msg, reason, domain string) error {
	t.Helper()
	st, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: domain})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// A plugin built before a call was in the contract answers it with a bare
// Unimplemented: the host sees ErrUnsupported, not an unknown error.
func TestABareUnimplementedIsUnsupported(t *testing.T) {
	got := fromStatus(context.Background(), status.Error(codes.Unimplemented, "unknown method ReadSpill for service dsh.shellexec.v1.ShellExecutor"))
	if !errors.Is(got, ErrUnsupported) || !strings.Contains(got.Error(), "unknown method ReadSpill") {
		t.Errorf("a bare Unimplemented became %v, want ErrUnsupported with its message", got)
	}
}
