package pluginapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// decode unmarshals JSON into a generic map, failing the test on error.
func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", raw, err)
	}
	return m
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestRunResultJSON(t *testing.T) {
	base := []string{"aborted", "durationMs", "exitCode", "signal", "stderr", "stdout", "timedOut", "timeoutMs"}
	tests := []struct {
		name     string
		res      RunResult
		wantKeys []string
		want     map[string]any // expected values of some keys
	}{
		{
			name:     "clean exit",
			res:      RunResult{ExitCode: intPtr(0), TimeoutMs: 120000, DurationMs: 7},
			wantKeys: base,
			want: map[string]any{
				"exitCode": 0.0, "signal": nil, "timedOut": false, "aborted": false,
				"timeoutMs": 120000.0, "durationMs": 7.0,
				"stdout": map[string]any{"text": "", "totalBytes": 0.0, "truncated": false},
				"stderr": map[string]any{"text": "", "totalBytes": 0.0, "truncated": false},
			},
		},
		{
			name: "killed by a timeout",
			res: RunResult{Signal: "SIGKILL", TimedOut: true, TimeoutMs: 1000, DurationMs: 1002,
				Stdout: CollectedOutput{Text: "partial", TotalBytes: 70000, Truncated: true},
				Stderr: CollectedOutput{Text: "err", TotalBytes: 3}},
			wantKeys: base,
			want: map[string]any{
				"exitCode": nil, "signal": "SIGKILL", "timedOut": true, "aborted": false, "timeoutMs": 1000.0,
				"stdout": map[string]any{"text": "partial", "totalBytes": 70000.0, "truncated": true},
				"stderr": map[string]any{"text": "err", "totalBytes": 3.0, "truncated": false},
			},
		},
		{
			name:     "aborted, with reason and leftovers",
			res:      RunResult{ExitCode: intPtr(130), Aborted: true, AbortReason: "stop", LeftoversKilled: 2},
			wantKeys: append(slices.Clone(base), "abortReason", "leftoversKilled"),
			want:     map[string]any{"exitCode": 130.0, "aborted": true, "abortReason": "stop", "leftoversKilled": 2.0},
		},
		{
			name: "spill path",
			res: RunResult{ExitCode: intPtr(1), Stdout: CollectedOutput{
				Text: "x", TotalBytes: 5e6, Truncated: true, SpillPath: "/p/out", SpillTruncated: true}},
			wantKeys: base,
			want: map[string]any{"stdout": map[string]any{
				"text": "x", "totalBytes": 5e6, "truncated": true, "spillPath": "/p/out", "spillTruncated": true}},
		},
		{
			name: "sandbox facts",
			res: RunResult{ExitCode: intPtr(1), Sandbox: &SandboxFacts{
				Mode: SandboxReadOnly, Enforced: []string{"landlock"}, LikelyDenial: true, Evidence: []string{"denied"}}},
			wantKeys: append(slices.Clone(base), "sandbox"),
			want: map[string]any{"sandbox": map[string]any{
				"mode": "read-only", "enforced": []any{"landlock"}, "likelyDenial": true, "evidence": []any{"denied"}}},
		},
		{
			name:     "empty sandbox facts are still present",
			res:      RunResult{Sandbox: &SandboxFacts{}},
			wantKeys: append(slices.Clone(base), "sandbox"),
			want:     map[string]any{"sandbox": map[string]any{"mode": "", "likelyDenial": false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := json.Marshal(tt.res)
			if err != nil {
				t.Fatal(err)
			}
			m := decode(t, raw)
			want := slices.Clone(tt.wantKeys)
			slices.Sort(want)
			if got := keys(m); !slices.Equal(got, want) {
				t.Errorf("keys %v, want %v\n%s", got, want, raw)
			}
			for k, v := range tt.want {
				if !reflect.DeepEqual(m[k], v) {
					t.Errorf("%s = %#v, want %#v\n%s", k, m[k], v, raw)
				}
			}
			// A pointer marshals the same as a value.
			rawPtr, err := json.Marshal(&tt.res)
			if err != nil || string(rawPtr) != string(raw) {
				t.Errorf("pointer marshals as %s (%v), value as %s", rawPtr, err, raw)
			}
		})
	}
}

func TestRunResultExitStatus(t *testing.T) {
	tests := []struct {
		res  RunResult
		want ExitStatus
	}{
		{RunResult{ExitCode: intPtr(0)}, ExitStatus{}},
		{RunResult{ExitCode: intPtr(3)}, ExitStatus{ExitCode: 3}},
		{RunResult{Signal: "SIGKILL"}, ExitStatus{Signal: "SIGKILL"}},
		{RunResult{}, ExitStatus{}},
	}
	for _, tt := range tests {
		if got := tt.res.ExitStatus(); got != tt.want {
			t.Errorf("%+v.ExitStatus() = %+v, want %+v", tt.res, got, tt.want)
		}
	}
}

func TestStreamString(t *testing.T) {
	for s, want := range map[Stream]string{Stdout: "stdout", Stderr: "stderr", 0: "unset"} {
		if got := s.String(); got != want {
			t.Errorf("Stream(%d).String() = %q, want %q", int(s), got, want)
		}
	}
}

// IncompleteUTF8Tail counts the bytes of a character cut short at the end,
// and nothing else: not a whole character, not bytes that are not UTF-8.
func TestIncompleteUTF8Tail(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"caf\u00e9", 0},          // a whole 2-byte character
		{"\u20ac", 0},             // a whole 3-byte one
		{"x\U0001F600", 0},        // a whole 4-byte one
		{"\xf0", 1},               // only a lead byte
		{"x\xf0\x9f", 2},          // a 4-byte character cut after 2
		{"x\xf0\x9f\x98", 3},      // ... after 3
		{"ab\xe2\x82", 2},         // a 3-byte one cut after 2
		{"\xc3", 1},               // a 2-byte one cut after 1
		{"a\x80\x80\x80\x80", 0},  // continuation bytes with no lead: not UTF-8
		{"\xc3\x80\x80\x80", 0},   // a whole 2-byte character, then stray bytes
		{"\U0001F600\xe2\x82", 2}, // a whole one, then one cut short
	} {
		if got := IncompleteUTF8Tail([]byte(tc.p)); got != tc.want {
			t.Errorf("IncompleteUTF8Tail(%q) = %d, want %d", tc.p, got, tc.want)
		}
	}
}
