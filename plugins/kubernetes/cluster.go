package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// cluster is a connection to the API server, in one namespace.
type cluster struct {
	cs        kubernetes.Interface
	rest      *rest.Config
	namespace string
	// name says which cluster, for errors: the context, or "in-cluster".
	name string
}

// connect makes the client the settings say, finding the configuration
// as kubectl does: the kubeconfig file named, else KUBECONFIG's files
// merged, else ~/.kube/config, and the in-cluster configuration when
// those hold none (clientcmd's deferred loading). Nothing is asked of
// the API server yet.
func connect(s Settings) (*cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	if s.Context != "" {
		// clientcmd's own error for a missing context does not say which
		// files it read, nor which contexts they hold.
		raw, err := cc.RawConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: the kubeconfig %s: %w", files(rules), err)
		}
		if _, ok := raw.Contexts[s.Context]; !ok {
			return nil, fmt.Errorf("%w: context: no context %q in the kubeconfig %s (it has: %s)", pluginapi.ErrInvalidSettings,
				s.Context, files(rules), strings.Join(slices.Sorted(maps.Keys(raw.Contexts)), ", "))
		}
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the kubeconfig %s: %w", files(rules), err)
	}
	cfg.UserAgent = "dsh-executor-kubernetes/" + Version
	ns := s.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil {
			return nil, fmt.Errorf("kubernetes: the namespace: %w", err)
		}
	}
	name := s.Context
	if name == "" {
		if raw, err := cc.RawConfig(); err == nil && raw.CurrentContext != "" {
			name = raw.CurrentContext
		} else {
			name = "in-cluster"
		}
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: a client of %s: %w", name, err)
	}
	return &cluster{cs: cs, rest: cfg, namespace: ns, name: name}, nil
}

// files names the kubeconfig files rules read, for errors.
func files(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return rules.ExplicitPath
	}
	if p := rules.GetLoadingPrecedence(); len(p) > 0 {
		return strings.Join(p, ":")
	}
	return "(none)"
}
