package kubernetes

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// refusal is err, with what refused it said plainly when the cluster did
// (403 Forbidden): a ResourceQuota of the namespace that has no room for
// the pod, RBAC (the kubeconfig's user lacks a permission; the API's
// message names the user, the verb, the resource and the namespace), or
// another admission (Pod Security). The API gives the three one reason,
// Forbidden, and tells them apart only in its message.
func refusal(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != http.StatusForbidden {
		return err
	}
	msg := status.Status().Message
	switch {
	case strings.Contains(msg, "exceeded quota") || strings.Contains(msg, "failed quota"):
		return fmt.Errorf("%w (a ResourceQuota of the namespace refused the pod: it has no room left for it, or the quota needs the pod to set a request or a limit)", err)
	case strings.Contains(msg, " cannot "):
		return fmt.Errorf("%w (the cluster's RBAC refused it: the kubeconfig's user needs a Role with that permission in the namespace; docs/kubernetes.md has the Role the executor needs)", err)
	}
	return fmt.Errorf("%w (an admission of the cluster refused it)", err)
}
