package kubernetes_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// rbacManifest is the Role, ServiceAccount and RoleBinding docs/kubernetes.md
// tells users to apply.
const rbacManifest = "../../docs/kubernetes/rbac.yaml"

// needed is every permission docs/kubernetes.md says the executor needs
// in its namespace: the manifest must grant each of them (what the
// executor does not exercise in this test is checked by an access
// review).
var needed = []authorizationv1.ResourceAttributes{
	{Resource: "pods", Verb: "create"}, {Resource: "pods", Verb: "get"}, {Resource: "pods", Verb: "list"},
	{Resource: "pods", Verb: "watch"}, {Resource: "pods", Verb: "patch"}, {Resource: "pods", Verb: "delete"},
	{Resource: "pods", Subresource: "exec", Verb: "create"}, {Resource: "pods", Subresource: "exec", Verb: "get"},
	{Resource: "events", Verb: "list"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}, {Group: "coordination.k8s.io", Resource: "leases", Verb: "list"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "patch"}, {Group: "coordination.k8s.io", Resource: "leases", Verb: "delete"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "create"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "patch"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "list"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "delete"},
}

// The RBAC manifest of the docs is enough for the executor: applied in
// the test's namespace, its ServiceAccount's token (a TokenRequest) is
// the only credential the executor gets, through a kubeconfig of its
// own; with it, a pod is created, the agent comes in over exec, a
// command runs, and Close deletes the pod; a pod that cannot start says
// why with its events. Every permission the docs name is granted. What
// the test applied is removed, and proved gone.
func TestTheRBACManifestIsEnoughForTheExecutor(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	sa := c.applyRBACManifest(t, rbacManifest)
	kubeconfig := c.serviceAccountKubeconfig(t, sa)
	// Nothing of this process's but that kubeconfig.
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("HOME", t.TempDir())

	saClient, err := clientOf(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, attrs := range needed {
		attrs.Namespace = c.namespace
		review, err := saClient.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("an access review as %s: %v", sa, err)
		}
		if !review.Status.Allowed {
			t.Errorf("the manifest's ServiceAccount may not %s %s in %s; the executor needs it", attrs.Verb, resourceName(attrs), c.namespace)
		}
	}

	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "kubeconfig": kubeconfig}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "echo as the service account; exit 4"}, nil)
	if err != nil || res.Stdout.Text != "as the service account\n" || res.ExitCode == nil || *res.ExitCode != 4 {
		t.Fatalf("a command with only the manifest's permissions: %+v, %v; want its output and exit code 4", res, err)
	}
	if err := x.Close(ctx); err != nil {
		t.Errorf("Close with only the manifest's permissions: %v", err)
	}

	missing := kubernetes.New()
	defer missing.Close(ctx)
	if err := missing.Configure(ctx, []byte(c.settings(t, map[string]any{
		"image": "dsh-test-missing:local", "imagePullPolicy": "Never", "kubeconfig": kubeconfig,
	}))); err != nil {
		t.Fatal(err)
	}
	_, err = pluginapi.RunRequest(ctx, missing, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "Warning ErrImageNeverPull") {
		t.Errorf("a pod of a missing image, with only the manifest's permissions: %v; want the pod's event in the error", err)
	}
}

// Removing a rule the executor uses from the manifest fails the run, and
// the error names what was denied: the test above would see it.
func TestTheRBACManifestWithoutExecFails(t *testing.T) {
	c := cluster(t)
	ctx := t.Context()
	manifest, err := os.ReadFile(rbacManifest)
	if err != nil {
		t.Fatal(err)
	}
	const execRule = `  - apiGroups: [""]
    resources: ["pods/exec"]
    verbs: ["create", "get"]
`
	if !bytes.Contains(manifest, []byte(execRule)) {
		t.Fatalf("%s has no rule of its own for pods/exec; this test removes that rule", rbacManifest)
	}
	cut := filepath.Join(t.TempDir(), "rbac.yaml")
	if err := os.WriteFile(cut, bytes.Replace(manifest, []byte(execRule), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	sa := c.applyRBACManifest(t, cut)
	kubeconfig := c.serviceAccountKubeconfig(t, sa)
	t.Setenv("KUBECONFIG", kubeconfig)
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "kubeconfig": kubeconfig}))); err != nil {
		t.Fatal(err)
	}
	_, err = pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "true"}, nil)
	if err == nil || !strings.Contains(err.Error(), "pods/exec") || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a run without pods/exec: %v; want it refused, naming pods/exec", err)
	}
}

func resourceName(a authorizationv1.ResourceAttributes) string {
	r := a.Resource
	if a.Subresource != "" {
		r += "/" + a.Subresource
	}
	if a.Group != "" {
		r += " (" + a.Group + ")"
	}
	return r
}

// applyRBACManifest creates the objects of the manifest at path in the
// test's namespace, with the typed client, and returns the name of its
// ServiceAccount. They are deleted when the test ends, and checked gone.
func (c *testCluster) applyRBACManifest(t *testing.T, path string) string {
	t.Helper()
	ctx := t.Context()
	objects, err := decodeManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	var sa string
	var made []func(context.Context) error
	var gone []func(context.Context) error
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i := len(made) - 1; i >= 0; i-- {
			if err := made[i](ctx); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("removing what the manifest made: %v", err)
			}
		}
		for _, g := range gone {
			if err := g(ctx); !apierrors.IsNotFound(err) {
				t.Errorf("an object of the manifest after its removal: %v; want it gone", err)
			}
		}
	})
	for _, obj := range objects {
		switch o := obj.(type) {
		case *rbacv1.Role:
			if o.Namespace != "" {
				t.Fatalf("%s: the Role %s names a namespace (%s); the manifest is applied in the user's", path, o.Name, o.Namespace)
			}
			roles := c.cs.RbacV1().Roles(c.namespace)
			if _, err := roles.Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: the Role: %v", path, err)
			}
			made = append(made, func(ctx context.Context) error { return roles.Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			gone = append(gone, func(ctx context.Context) error { _, err := roles.Get(ctx, o.Name, metav1.GetOptions{}); return err })
		case *corev1.ServiceAccount:
			if o.Namespace != "" {
				t.Fatalf("%s: the ServiceAccount %s names a namespace (%s); the manifest is applied in the user's", path, o.Name, o.Namespace)
			}
			sas := c.cs.CoreV1().ServiceAccounts(c.namespace)
			if _, err := sas.Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: the ServiceAccount: %v", path, err)
			}
			sa = o.Name
			made = append(made, func(ctx context.Context) error { return sas.Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			gone = append(gone, func(ctx context.Context) error { _, err := sas.Get(ctx, o.Name, metav1.GetOptions{}); return err })
		case *rbacv1.RoleBinding:
			if o.Namespace != "" {
				t.Fatalf("%s: the RoleBinding %s names a namespace (%s); the manifest is applied in the user's", path, o.Name, o.Namespace)
			}
			bindings := c.cs.RbacV1().RoleBindings(c.namespace)
			if _, err := bindings.Create(ctx, o, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: the RoleBinding: %v", path, err)
			}
			made = append(made, func(ctx context.Context) error { return bindings.Delete(ctx, o.Name, metav1.DeleteOptions{}) })
			gone = append(gone, func(ctx context.Context) error { _, err := bindings.Get(ctx, o.Name, metav1.GetOptions{}); return err })
		default:
			t.Fatalf("%s: a %T; want only a Role, a ServiceAccount and a RoleBinding", path, obj)
		}
	}
	if sa == "" || len(made) != 3 {
		t.Fatalf("%s: %d objects, ServiceAccount %q; want a Role, a ServiceAccount and a RoleBinding", path, len(made), sa)
	}
	return sa
}

// decodeManifest is the objects of the YAML documents in the file at
// path, typed by the client's scheme.
func decodeManifest(path string) ([]runtime.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var objects []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		objects = append(objects, obj)
	}
}

// serviceAccountKubeconfig writes a kubeconfig whose only credential is a
// token of the ServiceAccount sa (a TokenRequest, for ten minutes), for
// the cluster of the admin kubeconfig, in the test's namespace.
func (c *testCluster) serviceAccountKubeconfig(t *testing.T, sa string) string {
	t.Helper()
	tok, err := c.cs.CoreV1().ServiceAccounts(c.namespace).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token of the ServiceAccount %s: %v", sa, err)
	}
	admin, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	ca := admin.CAData
	if len(ca) == 0 && admin.CAFile != "" {
		if ca, err = os.ReadFile(admin.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: ca, TLSServerName: admin.ServerName}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[sa] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: sa, Namespace: c.namespace}
	cfg.CurrentContext = sa
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientOf is a client of the kubeconfig at path.
func clientOf(path string) (k8s.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return k8s.NewForConfig(cfg)
}
