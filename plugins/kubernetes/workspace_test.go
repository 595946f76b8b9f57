package kubernetes_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dsh-host/dsh-host/pluginapi"
	"github.com/dsh-host/dsh-host/plugins/kubernetes"
)

// claim makes a PersistentVolumeClaim bound to a hostPath
// PersistentVolume of a directory of this machine (the cluster's only
// node; the cluster has no provisioner), and deletes both at the test's
// end, waiting until they are gone.
func (c *testCluster) claim(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	pvs, pvcs := c.cs.CoreV1().PersistentVolumes(), c.cs.CoreV1().PersistentVolumeClaims(c.namespace)
	size := resource.MustParse("64Mi")
	empty := ""
	hostPath := corev1.HostPathDirectory
	pvc, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-test-ws-"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := pvs.Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dsh-test-ws-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{Namespace: c.namespace, Name: pvc.Name},
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &hostPath}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		_ = pvcs.Delete(ctx, pvc.Name, metav1.DeleteOptions{})
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		_ = pvcs.Delete(ctx, pvc.Name, metav1.DeleteOptions{})
		_ = pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{})
		for {
			_, cerr := pvcs.Get(ctx, pvc.Name, metav1.GetOptions{})
			_, verr := pvs.Get(ctx, pv.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(cerr) && apierrors.IsNotFound(verr) {
				return
			}
			if ctx.Err() != nil {
				t.Errorf("the claim %s (%v) or its volume %s (%v) is still there", pvc.Name, cerr, pv.Name, verr)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := pvcs.Get(ctx, pvc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == corev1.ClaimBound {
			return pvc.Name
		}
		if time.Now().After(deadline) {
			t.Fatalf("the claim %s is not bound: %+v", pvc.Name, got.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A claim is the workspace of the created pods, and the commands start in
// it: what one executor's pod writes there, a second executor's pod reads
// (in read-only mode, where it may not write).
func TestAClaimIsTheWorkspace(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	settings := c.settings(t, map[string]any{"image": c.image, "workspace": map[string]any{"claimName": c.claim(t), "mountPath": "/work"}})

	first := kubernetes.New()
	defer first.Close(ctx)
	if err := first.Configure(ctx, []byte(settings)); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, first, pluginapi.ExecRequest{Command: "pwd; echo kept > note"}, nil)
	if err != nil || res.ExitCode == nil || *res.ExitCode != 0 || res.Stdout.Text != "/work\n" {
		t.Fatalf("writing in the workspace: %+v, %v; want it written in /work", res, err)
	}
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}

	second := kubernetes.New()
	defer second.Close(ctx)
	if err := second.Configure(ctx, []byte(settings)); err != nil {
		t.Fatal(err)
	}
	res, err = pluginapi.RunRequest(ctx, second, pluginapi.ExecRequest{Command: "cat note; echo more >> note", SandboxMode: pluginapi.SandboxReadOnly}, nil)
	if err != nil || res.Stdout.Text != "kept\n" || res.ExitCode == nil || *res.ExitCode == 0 {
		t.Errorf("the workspace in a second executor's read-only pod: %+v, %v; want what the first wrote, and no write", res, err)
	}
	if err := second.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// An emptyDir workspace has its size limit.
func TestAnEmptyDirWorkspaceHasItsSizeLimit(t *testing.T) {
	c := sandboxed(t)
	ctx := t.Context()
	x := kubernetes.New()
	defer x.Close(ctx)
	if err := x.Configure(ctx, []byte(c.settings(t, map[string]any{"image": c.image, "workspace": map[string]any{"mountPath": "/w", "sizeLimitMiB": 32}}))); err != nil {
		t.Fatal(err)
	}
	res, err := pluginapi.RunRequest(ctx, x, pluginapi.ExecRequest{Command: "pwd && touch x"}, nil)
	if err != nil || res.Stdout.Text != "/w\n" || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("a command in the emptyDir workspace: %+v, %v", res, err)
	}
	for _, p := range c.podsOf(t) {
		for _, v := range p.Spec.Volumes {
			if v.Name == "dsh-workspace" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("32Mi")) != 0) {
				t.Errorf("the workspace's volume: %+v; want an emptyDir of 32Mi", v.VolumeSource)
			}
		}
	}
}
