package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dsh-host/dsh-host/pluginapi"
)

// attachSelected attaches to the running pod selector matches. When
// several do, the choice is deterministic: the oldest, then the first by
// name; the session's Where names it. The executor never deletes it.
func (c *cluster) attachSelected(ctx context.Context, selector, container string) (*pod, error) {
	if _, err := labels.Parse(selector); err != nil {
		return nil, fmt.Errorf("%w: selector %q: %v", pluginapi.ErrInvalidSettings, selector, err)
	}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{
		LabelSelector: selector,
		FieldSelector: "status.phase=" + string(corev1.PodRunning),
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: the pods of selector %q in %s (%s): %w", selector, c.namespace, c.name, err)
	}
	running := slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if len(running) == 0 {
		return nil, fmt.Errorf("kubernetes: no running pod matches the selector %q in the namespace %s (%s): the executor attaches only to a running pod", selector, c.namespace, c.name)
	}
	slices.SortFunc(running, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return c.attach(ctx, running[0].Name, container)
}
