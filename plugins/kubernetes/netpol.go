package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dsh-host/dsh-host/internal/hostid"
)

// labelMode is the sandbox mode a created pod has the shape of;
// labelShape names the pod alone (a random value given before it is
// created), for the NetworkPolicy that selects it.
const (
	labelMode  = "dsh-host.dev/mode"
	labelShape = "dsh-host.dev/shape"
)

// shapeID is a new value of labelShape.
func shapeID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// denyAll creates the NetworkPolicy that denies all ingress and egress to
// the pod labelled labelShape=id, before that pod exists: so that no
// moment of the pod's life is without it. The policy's name is returned.
func (c *cluster) denyAll(ctx context.Context, id string) (string, error) {
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{
			Name: "dsh-deny-" + id,
			// The pod's labels and annotation of its plugin: a policy
			// whose plugin died before it had a pod to own it is swept
			// as such a pod is.
			Labels: map[string]string{
				labelExecutor: Name, labelMachine: labelValue(hostid.MachineID()), labelPlugin: PluginLabel(), labelShape: id,
			},
			Annotations: map[string]string{annotationPlugin: hostid.Self()},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelShape: id}},
			// Both types, no rules: nothing in, nothing out.
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	made, err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("kubernetes: creating the NetworkPolicy that denies the network of a pod of a mode without it, in %s (%s): %w", c.namespace, c.name, err)
	}
	return made.Name, nil
}

// ownPolicy makes the pod the policy's owner, so that the garbage
// collector deletes the policy with the pod when the executor cannot
// (its plugin died).
func (p *pod) ownPolicy(ctx context.Context) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.name, UID: p.uid}},
	}})
	if err != nil {
		return err
	}
	// One patch, so that the Role needs patch alone for it (a merge patch
	// replaces the list, which the executor made empty).
	_, err = p.c.cs.NetworkingV1().NetworkPolicies(p.c.namespace).Patch(ctx, p.policy, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes: giving the NetworkPolicy %s its pod as owner: %w", p.policy, err)
	}
	return nil
}

// deletePolicy deletes the pod's NetworkPolicy, if it has one; one gone
// already (the garbage collector's) is no error.
func (c *cluster) deletePolicy(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	err := c.cs.NetworkingV1().NetworkPolicies(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: deleting the NetworkPolicy %s: %w", name, err)
	}
	return nil
}
