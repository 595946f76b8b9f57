package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-host/dsh-host/host"
	"github.com/dsh-host/dsh-host/pluginapi"
)

// sandboxing stands for a sandboxing executor in front of a real bash-local
// plugin: it reports a sandbox mode and records the mode each command asks
// for. The approval gate is what these tests exercise; the confinement
// itself belongs to bash-sandbox.
type sandboxing struct {
	pluginapi.ShellExecutor
	mu    sync.Mutex
	asked []pluginapi.SandboxMode
}

func (s *sandboxing) Describe(ctx context.Context) (pluginapi.Description, error) {
	d, err := s.ShellExecutor.Describe(ctx)
	d.SandboxMode = pluginapi.SandboxWorkspaceWrite
	return d, err
}

func (s *sandboxing) Resolve(ctx context.Context, req pluginapi.ExecRequest) (pluginapi.ExecSpec, error) {
	s.mu.Lock()
	s.asked = append(s.asked, req.SandboxMode)
	s.mu.Unlock()
	req.SandboxMode = pluginapi.SandboxNone
	return s.ShellExecutor.Resolve(ctx, req)
}

func (s *sandboxing) modes() []pluginapi.SandboxMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pluginapi.SandboxMode(nil), s.asked...)
}

func sandboxedTool(t *testing.T, policy host.ApprovalPolicy) (*host.BashTool, *sandboxing) {
	t.Helper()
	r := runtimeOn(t, pluginBin, 0)
	shell := &sandboxing{ShellExecutor: r.Shell()}
	tool, err := host.NewBashTool(context.Background(), shell, r.Jobs(), policy)
	if err != nil {
		t.Fatal(err)
	}
	return tool, shell
}

func TestBashToolOffersEscalationUnderASandbox(t *testing.T) {
	tool, _ := sandboxedTool(t, host.ApprovalPolicy{})
	var schema struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties["sandbox_permissions"].Enum; strings.Join(got, ",") != "use_default,require_escalated" {
		t.Errorf("sandbox_permissions enum %v", got)
	}
	if _, ok := schema.Properties["justification"]; !ok {
		t.Error("no justification under a sandboxing executor")
	}
}

// escalate asks tool to create a file outside the sandbox, and says whether
// the command ran.
func escalate(t *testing.T, ctx context.Context, tool *host.BashTool, a host.Approver) (ran bool, err error) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "ran")
	_, err = tool.Call(ctx, "agent", host.BashInput{
		Command: "touch " + mark, SandboxPermissions: host.RequireEscalated, Justification: "needs the network",
	}, host.CallOptions{Approver: a})
	_, statErr := os.Stat(mark)
	return statErr == nil, err
}

func TestEscalationRunsOnlyWhenApproved(t *testing.T) {
	yes := host.ApproverFunc(func(context.Context, host.EscalationRequest) (bool, error) { return true, nil })
	no := host.ApproverFunc(func(context.Context, host.EscalationRequest) (bool, error) { return false, nil })
	broken := host.ApproverFunc(func(context.Context, host.EscalationRequest) (bool, error) {
		return true, errors.New("the approval UI is gone")
	})
	silent := host.ApproverFunc(func(ctx context.Context, _ host.EscalationRequest) (bool, error) {
		<-ctx.Done()
		return true, ctx.Err()
	})
	late := host.ApproverFunc(func(ctx context.Context, _ host.EscalationRequest) (bool, error) {
		<-ctx.Done()
		return true, nil // a yes that comes after the deadline is no yes
	})
	for _, tc := range []struct {
		name     string
		policy   host.ApprovalPolicy
		approver host.Approver
		wantRun  bool
		wantWhy  string
	}{
		{"approved", host.ApprovalPolicy{}, yes, true, ""},
		{"refused", host.ApprovalPolicy{}, no, false, "the approver said no"},
		{"no approver", host.ApprovalPolicy{}, nil, false, "no approver is configured"},
		{"approver fails", host.ApprovalPolicy{}, broken, false, "the approval UI is gone"},
		{"no answer", host.ApprovalPolicy{TimeoutMs: 200}, silent, false, "no answer within 200ms"},
		{"late answer", host.ApprovalPolicy{TimeoutMs: 200}, late, false, "no answer within 200ms"},
		{"policy denies", host.ApprovalPolicy{Escalation: host.EscalationDeny}, yes, false, "the approval policy refuses escalation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool, shell := sandboxedTool(t, tc.policy)
			ran, err := escalate(t, context.Background(), tool, tc.approver)
			if ran != tc.wantRun {
				t.Errorf("ran %v, want %v (err %v)", ran, tc.wantRun, err)
			}
			if tc.wantRun {
				if err != nil {
					t.Fatal(err)
				}
				if m := shell.modes(); len(m) != 1 || m[0] != host.EscalationTarget {
					t.Errorf("the executor was asked for %v, want [%s]", m, host.EscalationTarget)
				}
				return
			}
			if !errors.Is(err, host.ErrEscalationDenied) || !strings.Contains(err.Error(), tc.wantWhy) {
				t.Errorf("err %v, want ErrEscalationDenied saying %q", err, tc.wantWhy)
			}
			if m := shell.modes(); len(m) != 0 {
				t.Errorf("a denied escalation reached the executor: %v", m)
			}
		})
	}
}

func TestEscalationAskIsTold(t *testing.T) {
	tool, _ := sandboxedTool(t, host.ApprovalPolicy{})
	var got host.EscalationRequest
	a := host.ApproverFunc(func(_ context.Context, req host.EscalationRequest) (bool, error) {
		got = req
		return false, nil
	})
	if _, err := escalate(t, context.Background(), tool, a); err == nil {
		t.Fatal("a refused escalation ran")
	}
	if got.Owner != "agent" || !strings.HasPrefix(got.Command, "touch ") || got.Justification != "needs the network" ||
		got.Mode != pluginapi.SandboxWorkspaceWrite || got.Target != host.EscalationTarget {
		t.Errorf("the approver was asked %+v", got)
	}
}

func TestEscalationDeniedWhenTheCallIsCancelled(t *testing.T) {
	tool, _ := sandboxedTool(t, host.ApprovalPolicy{})
	ctx, cancel := context.WithCancel(context.Background())
	a := host.ApproverFunc(func(actx context.Context, _ host.EscalationRequest) (bool, error) {
		cancel()
		<-actx.Done()
		return true, nil
	})
	ran, err := escalate(t, ctx, tool, a)
	if ran || !errors.Is(err, host.ErrEscalationDenied) {
		t.Errorf("ran %v, err %v: want denied", ran, err)
	}
}

func TestUseDefaultRunsWithoutAsking(t *testing.T) {
	tool, shell := sandboxedTool(t, host.ApprovalPolicy{})
	asked := false
	a := host.ApproverFunc(func(context.Context, host.EscalationRequest) (bool, error) { asked = true; return true, nil })
	text, err := tool.Call(context.Background(), "agent", host.BashInput{Command: "echo in", SandboxPermissions: host.UseDefault}, host.CallOptions{Approver: a})
	if err != nil || text != "in" || asked {
		t.Errorf("text %q err %v asked %v", text, err, asked)
	}
	if m := shell.modes(); len(m) != 1 || m[0] != pluginapi.SandboxNone {
		t.Errorf("modes %v, want the default", m)
	}
	if _, err := tool.Call(context.Background(), "agent", host.BashInput{Command: "true", SandboxPermissions: "bogus"}, host.CallOptions{}); !errors.Is(err, host.ErrToolInput) {
		t.Errorf("bogus sandbox_permissions: %v", err)
	}
}

func TestParseApprovalPolicy(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    host.ApprovalPolicy
		wantErr string
	}{
		{"", host.ApprovalPolicy{Escalation: host.EscalationAsk}, ""},
		{"null", host.ApprovalPolicy{Escalation: host.EscalationAsk}, ""},
		{`{"escalation":"deny","timeoutMs":5}`, host.ApprovalPolicy{Escalation: host.EscalationDeny, TimeoutMs: 5}, ""},
		{`{"escalation":"always"}`, host.ApprovalPolicy{}, "approval.escalation"},
		{`{"timeoutMs":-1}`, host.ApprovalPolicy{}, "approval.timeoutMs"},
	} {
		got, err := host.ParseApprovalPolicy([]byte(tc.raw))
		if tc.wantErr != "" {
			if !errors.Is(err, host.ErrSettings) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want one naming %s", tc.raw, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v %v, want %+v", tc.raw, got, err, tc.want)
		}
	}
}

func TestApprovalSectionIsChecked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := os.WriteFile(path, []byte("approval:\n  escalation: ask\n  timeoutMS: 10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := host.LoadSettingsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Section("approval", host.ApprovalSchema); err == nil || !strings.Contains(err.Error(), path+":3: approval.timeoutMS: unknown setting") {
		t.Errorf("err %v, want the misspelt key with its line", err)
	}
}
