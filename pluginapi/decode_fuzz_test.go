package pluginapi

import (
	"reflect"
	"testing"

	pb "github.com/dsh-host/dsh-host/pluginapi/proto/shellexec/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodeWire feeds arbitrary bytes to the decoders of every message a
// side receives from the other, then to the converters: nothing may panic,
// and whatever decodes converts to the Go vocabulary and back to the same
// value.
func FuzzDecodeWire(f *testing.F) {
	seed, _ := proto.Marshal(&pb.RunEvent{Event: &pb.RunEvent_Result{Result: resultToProto(RunResult{
		ExitCode: new(int), Stdout: CollectedOutput{Text: "hi\n", TotalBytes: 3}, Sandbox: &SandboxFacts{Evidence: []string{"x"}},
	})}})
	f.Add(seed)
	spec, _ := proto.Marshal(&pb.RunInput{Input: &pb.RunInput_Start{Start: &pb.RunStart{
		Spec: specToProto(ExecSpec{Command: "true", Env: map[string]string{"A": "b"}}),
	}}})
	f.Add(spec)
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev pb.RunEvent
		if proto.Unmarshal(data, &ev) == nil {
			if r := ev.GetResult(); r != nil {
				got := resultFromProto(r)
				if again := resultFromProto(resultToProto(got)); !reflect.DeepEqual(normResult(again), normResult(got)) {
					t.Fatalf("result does not survive a second trip: %+v vs %+v", again, got)
				}
			}
			if o := ev.GetOutput(); o != nil {
				_ = streamFromProto(o.GetStream())
			}
		}
		var in pb.RunInput
		if proto.Unmarshal(data, &in) == nil {
			if s := in.GetStart(); s != nil {
				got := specFromProto(s.GetSpec())
				if again := specFromProto(specToProto(got)); !reflect.DeepEqual(normSpec(again), normSpec(got)) {
					t.Fatalf("spec does not survive a second trip: %+v vs %+v", again, got)
				}
				_ = requestFromProto(s.GetRequest())
			}
		}
		var w pb.WaitResponse
		if proto.Unmarshal(data, &w) == nil {
			got := exitFromProto(w.GetExit())
			if again := exitFromProto(exitToProto(got)); !reflect.DeepEqual(again, got) {
				t.Fatalf("exit does not survive a second trip: %+v vs %+v", again, got)
			}
		}
		var d pb.DescribeResponse
		if proto.Unmarshal(data, &d) == nil {
			_ = describeFromProto(&d)
		}
	})
}
