package pluginapi

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain marks the ErrorInfo details that carry our sentinels.
const errorDomain = "shellexec.dsh-host"

// wireErrors maps each sentinel to its gRPC code and the reason that names it
// on the wire. This table is the only place errors meet gRPC codes.
var wireErrors = []struct {
	err    error
	code   codes.Code
	reason string
}{
	{ErrUnusableWorkdir, codes.FailedPrecondition, "UNUSABLE_WORKDIR"},
	{ErrMissingShell, codes.FailedPrecondition, "MISSING_SHELL"},
	{ErrAbortedBeforeStart, codes.Canceled, "ABORTED_BEFORE_START"},
	{ErrSpecNotResolved, codes.InvalidArgument, "SPEC_NOT_RESOLVED"},
	{ErrInvalidRequest, codes.InvalidArgument, "INVALID_REQUEST"},
	{ErrInvalidSettings, codes.InvalidArgument, "INVALID_SETTINGS"},
	{ErrRequestTooLarge, codes.ResourceExhausted, "REQUEST_TOO_LARGE"},
	{ErrUnknownProcess, codes.NotFound, "UNKNOWN_PROCESS"},
	{ErrExecutorClosed, codes.FailedPrecondition, "EXECUTOR_CLOSED"},
	{ErrPluginUnavailable, codes.Unavailable, "PLUGIN_UNAVAILABLE"},
	{ErrNotASpill, codes.PermissionDenied, "NOT_A_SPILL"},
	{ErrUnsupported, codes.Unimplemented, "UNSUPPORTED"},
	{ErrInputClosed, codes.FailedPrecondition, "INPUT_CLOSED"},
}

// toStatus turns an executor's error into a gRPC status error that keeps its
// message and names its sentinel.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	// A status message is a proto string: it must be valid UTF-8, or the
	// details would be dropped on the way.
	msg := strings.ToValidUTF8(err.Error(), "\uFFFD")
	for _, w := range wireErrors {
		if errors.Is(err, w.err) {
			st, detErr := status.New(w.code, msg).WithDetails(&errdetails.ErrorInfo{
				Reason: w.reason, Domain: errorDomain,
			})
			if detErr != nil {
				return status.Error(w.code, msg)
			}
			return st.Err()
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, msg)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, msg)
	}
	return status.Error(codes.Unknown, msg)
}

// remoteError is an error that came over the wire: its message as the
// executor wrote it, and the sentinel it wrapped.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

// fromStatus turns a gRPC error back into the executor's error. ctx is the
// caller's: a call that failed because the caller gave up returns ctx's error,
// not the transport's.
func fromStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.Domain != errorDomain {
			continue
		}
		for _, w := range wireErrors {
			if w.reason == info.Reason {
				return &remoteError{msg: st.Message(), sentinel: w.err}
			}
		}
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded:
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &remoteError{msg: "pluginapi: plugin unavailable: " + st.Message(), sentinel: ErrPluginUnavailable}
	case codes.Unavailable:
		return &remoteError{msg: "pluginapi: plugin unavailable: " + st.Message(), sentinel: ErrPluginUnavailable}
	case codes.ResourceExhausted:
		return &remoteError{msg: "pluginapi: request too large: " + st.Message(), sentinel: ErrRequestTooLarge}
	case codes.Unimplemented:
		// A plugin built before the call was in the contract.
		return &remoteError{msg: "pluginapi: not supported by this executor: " + st.Message(), sentinel: ErrUnsupported}
	}
	return errors.New(st.Message())
}
