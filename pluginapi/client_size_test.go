package pluginapi

import (
	"errors"
	"strings"
	"testing"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/protobuf/proto"
)

// A request of exactly MaxRequestBytes goes; one byte more is refused
// before it is sent, as ErrRequestTooLarge.
func TestRequestSizeBoundIsInclusive(t *testing.T) {
	sized := func(n int) *pb.RunInput {
		return &pb.RunInput{Input: &pb.RunInput_Start{Start: &pb.RunStart{Request: &pb.ExecRequest{Command: []byte(strings.Repeat("x", n))}}}}
	}
	// The command's length that makes the message exactly the bound (its
	// length prefixes grow with it, so step to it).
	n := MaxRequestBytes
	for proto.Size(sized(n)) > MaxRequestBytes {
		n -= proto.Size(sized(n)) - MaxRequestBytes
	}
	if got := proto.Size(sized(n)); got != MaxRequestBytes {
		t.Fatalf("no command length makes a message of exactly %d bytes (%d gives %d)", MaxRequestBytes, n, got)
	}
	if err := checkSize(sized(n)); err != nil {
		t.Errorf("a request of exactly %d bytes: %v, want it sent", MaxRequestBytes, err)
	}
	if err := checkSize(sized(n + 1)); !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("a request of %d bytes: %v, want ErrRequestTooLarge", MaxRequestBytes+1, err)
	}
}
