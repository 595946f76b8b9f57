package kubernetes_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// The settings schema takes the executor's settings (the sandbox policy,
// the pod template, the workspace, a selector) and refuses what the
// executor cannot take, as a host validates them before Configure.
func TestTheSettingsSchema(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(kubernetes.SettingsSchema), &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		settings string
		ok       bool
	}{
		{`{"image": "i", "user": "1000:1000", "serviceAccountToken": true,
		   "sandboxPolicy": {"defaultMode": "read-only", "network": false, "limits": {"memoryMiB": 512, "tmpMiB": 64, "processes": 0}},
		   "podTemplate": {"resources": {"limits": {"cpu": "1", "memory": 1073741824}, "requests": {"cpu": "100m"}},
		     "nodeSelector": {"pool": "agents"}, "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule", "tolerationSeconds": 5}],
		     "serviceAccountName": "runner", "runtimeClassName": "gvisor", "imagePullSecrets": [{"name": "regcred"}]},
		   "workspace": {"mountPath": "/work", "claimName": "ws"}}`, true},
		{`{"image": "i", "workspace": {"mountPath": "/work", "sizeLimitMiB": 100}}`, true},
		{`{"selector": "app=agent,tier in (a,b)"}`, true},
		{`{"image": "i", "podPerSession": false, "maxSessions": 4}`, true},
		{`{"image": "i", "maxSessions": -1}`, false},
		{`{"image": "i", "podPerSession": "yes"}`, false},
		{`{"image": "i", "sandboxPolicy": {"writableRoots": ["/srv"]}}`, false},
		{`{"image": "i", "sandboxPolicy": {"defaultMode": "full"}}`, false},
		{`{"image": "i", "user": "nobody"}`, false},
		{`{"image": "i", "workspace": {"claimName": "ws"}}`, false},
		{`{"image": "i", "workspace": {"mountPath": "work"}}`, false},
		{`{"image": "i", "podTemplate": {"hostNetwork": true}}`, false},
		{`{"image": "i", "podTemplate": {"tolerations": [{"operator": "Maybe"}]}}`, false},
		{`{"image": "i", "podTemplate": {"imagePullSecrets": [{}]}}`, false},
	} {
		var v map[string]any
		if err := json.Unmarshal([]byte(tt.settings), &v); err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(v); (err == nil) != tt.ok {
			t.Errorf("settings %s: %v; want valid: %v", tt.settings, err, tt.ok)
		}
		// What the schema takes, Configure takes too; what it refuses,
		// Configure refuses.
		x := kubernetes.New()
		if err := x.Configure(t.Context(), []byte(tt.settings)); (err == nil) != tt.ok {
			t.Errorf("Configure(%s): %v; want it taken: %v", tt.settings, err, tt.ok)
		}
		x.Close(t.Context())
	}
}

// A sandbox section for an attached pod is refused: the executor does not
// shape a pod it did not make, and taking the section would say otherwise.
func TestASandboxSectionForAnAttachedPodIsRefused(t *testing.T) {
	for _, settings := range []string{
		`{"pod": "p", "sandboxPolicy": {"defaultMode": "read-only"}}`,
		`{"selector": "app=agent", "sandboxPolicy": {"network": false, "limits": {"memoryMiB": 64}}}`,
	} {
		x := kubernetes.New()
		err := x.Configure(t.Context(), []byte(settings))
		if !errors.Is(err, pluginapi.ErrInvalidSettings) || !strings.Contains(err.Error(), "sandboxPolicy") {
			t.Errorf("Configure(%s): %v; want it refused, naming sandboxPolicy", settings, err)
		}
		x.Close(t.Context())
	}
}
