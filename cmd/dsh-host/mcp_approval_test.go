package main

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-host/dsh-host/host"
)

// An answer to an escalation question is good once, for the input it was
// asked about, within the policy's time.
func TestApprovalsRedeemOnceForTheSameInput(t *testing.T) {
	a := newApprovals(host.ApprovalPolicy{TimeoutMs: 50})
	in := host.BashInput{Command: "rm -rf build", SandboxPermissions: host.RequireEscalated}
	state := a.issue(in)
	if err := a.redeem(state, in); err != nil {
		t.Fatalf("first answer: %v", err)
	}
	if err := a.redeem(state, in); err == nil || !strings.Contains(err.Error(), "no open question") {
		t.Errorf("a replayed answer: %v", err)
	}
	other := in
	other.Command = "rm -rf /"
	if err := a.redeem(a.issue(in), other); err == nil || !strings.Contains(err.Error(), "another command") {
		t.Errorf("an answer carried to another command: %v", err)
	}
	if err := a.redeem("made-up", in); err == nil {
		t.Error("an answer to a question never asked was taken")
	}
	late := a.issue(in)
	time.Sleep(80 * time.Millisecond)
	if err := a.redeem(late, in); err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("a late answer: %v", err)
	}
}

func TestApprovalsForgetTheOldestPastTheBound(t *testing.T) {
	a := newApprovals(host.ApprovalPolicy{})
	in := host.BashInput{Command: "true"}
	first := a.issue(in)
	for range maxPendingApprovals {
		a.issue(in)
	}
	if err := a.redeem(first, in); err == nil {
		t.Error("the oldest question outlived the bound")
	}
	if len(a.pending) != maxPendingApprovals {
		t.Errorf("%d questions pending, want %d", len(a.pending), maxPendingApprovals)
	}
}
