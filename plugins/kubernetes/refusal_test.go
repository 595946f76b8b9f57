package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// limitedKubeconfig is a kubeconfig of a ServiceAccount made for the test,
// bound to a Role of rules (a token from the TokenRequest API, the
// cluster's address and CA from the test's kubeconfig); the account, its
// Role and its binding go at the test's end.
func (c *testCluster) limitedKubeconfig(t *testing.T, rules []rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	name := "dsh-test-limited"
	meta := metav1.ObjectMeta{Name: name}
	if _, err := c.cs.CoreV1().ServiceAccounts(c.namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.cs.RbacV1().RoleBindings(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.cs.RbacV1().Roles(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = c.cs.CoreV1().ServiceAccounts(c.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	if _, err := c.cs.RbacV1().Roles(c.namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.RbacV1().RoleBindings(c.namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: meta,
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: c.namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := c.cs.CoreV1().ServiceAccounts(c.namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := clientcmd.LoadFromFile(os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	server := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = server
	cfg.AuthInfos["limited"] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts["limited"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "limited", Namespace: c.namespace}
	cfg.CurrentContext = "limited"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// everything is the Role the executor needs (docs/kubernetes.md), less
// what drop says: resource, or resource's verb.
func everything(drop ...string) []rbacv1.PolicyRule {
	all := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create", "get", "list", "watch", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "list", "patch", "delete"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "patch", "list", "delete"}},
	}
	var rules []rbacv1.PolicyRule
	for _, r := range all {
		var verbs []string
		for _, v := range r.Verbs {
			if !slices.Contains(drop, r.Resources[0]+" "+v) {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) > 0 {
			r.Verbs = verbs
			rules = append(rules, r)
		}
	}
	return rules
}

// A user whose Role lacks a permission the executor needs gets an error
// naming the verb, the resource and the namespace, and that RBAC refused
// it; nothing is left behind.
func TestRBACDeniedNamesTheVerbAndResource(t *testing.T) {
	c := cluster(t)
	for _, drop := range []string{"pods/exec create", "pods create", "leases create"} {
		t.Run(strings.ReplaceAll(drop, " ", "-"), func(t *testing.T) {
			kubeconfig := c.limitedKubeconfig(t, everything(drop))
			x := kubernetes.New()
			defer x.Close(t.Context())
			if err := x.Configure(t.Context(), []byte(c.settings(t, map[string]any{"image": c.image, "kubeconfig": kubeconfig}))); err != nil {
				t.Fatal(err)
			}
			verb, res, _ := strings.Cut(drop, " ")
			_, err := pluginapi.RunRequest(t.Context(), x, pluginapi.ExecRequest{Command: "true"}, nil)
			if err == nil || !strings.Contains(err.Error(), verb) || !strings.Contains(err.Error(), res) || !strings.Contains(err.Error(), c.namespace) || !strings.Contains(err.Error(), "RBAC") {
				t.Errorf("a Role without %s: %v; want an error naming the verb, the resource, the namespace and RBAC", drop, err)
			}
		})
	}
}

// A namespace whose ResourceQuota leaves no room for the pod: the error
// says the quota refused it, and names it.
func TestAQuotaWithoutRoomForThePodIsSaid(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	q, err := c.cs.CoreV1().ResourceQuotas(c.namespace).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh-test-no-room"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.cs.CoreV1().ResourceQuotas(c.namespace).Delete(ctx, q.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("removing the quota: %v", err)
		}
	})
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image}))); err != nil {
		t.Fatal(err)
	}
	_, err = pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "ResourceQuota") || !strings.Contains(err.Error(), q.Name) || !strings.Contains(err.Error(), c.namespace) {
		t.Errorf("a pod the namespace's quota has no room for: %v; want an error saying the quota refused it, naming it", err)
	}
}
