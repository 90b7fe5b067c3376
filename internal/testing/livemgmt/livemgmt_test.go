package livemgmt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

func TestParseImage(t *testing.T) {
	for in, want := range map[string][2]string{
		"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.0": {"cluster-api-controller", "v1.14.0"},
		"gcr.io/k8s-staging-cluster-api/capd-manager:v1.13.5":        {"capd-manager", "v1.13.5"},
		"localhost:5000/x/capd-manager":                              {"capd-manager", ""},
		"capd-manager:v1.2.3@sha256:abc":                             {"capd-manager", "v1.2.3"},
	} {
		n, tag := parseImage(in)
		if n != want[0] || tag != want[1] {
			t.Errorf("parseImage(%q) = %q, %q; want %q, %q", in, n, tag, want[0], want[1])
		}
	}
}

func TestManagerBinaryPicksSameMinor(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CAPCTL_CAPI_BINS", dir)
	for _, v := range []string{"v1.13.5", "v1.13.2", "v1.14.2"} {
		if err := os.MkdirAll(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, v, LabelCore), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for tag, want := range map[string]string{"v1.13.4": "v1.13.5", "v1.14.0": "v1.14.2", "v1.13.2": "v1.13.2"} {
		p, v, err := managerBinary(LabelCore, tag)
		if err != nil || v != want || p != filepath.Join(dir, want, LabelCore) {
			t.Errorf("managerBinary(%s) = %s, %s, %v; want the %s set", tag, p, v, err, want)
		}
	}
	if _, _, err := managerBinary(LabelCore, "v1.12.0"); err == nil || !strings.Contains(err.Error(), "make live-bins") {
		t.Errorf("a minor with no set: %v", err)
	}
	if _, _, err := managerBinary(LabelDocker, "v1.14.0"); err == nil {
		t.Errorf("a label with no binary was found")
	}
}

// TestClusterControllers: kube-controller-manager really runs (Deployments become pods, a
// deleted namespace is finalized), and the kubelet stand-in binds pods and says why it cannot
// run an image that is no Cluster API manager.
func TestClusterControllers(t *testing.T) {
	testenv.SkipShort(t, "live test: starts a management cluster", "e2e")
	RequireBinaries(t)
	h, err := NewHost(Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Stop()
		if t.Failed() {
			t.Logf("logs kept in %s", h.Dir)
		} else {
			os.RemoveAll(h.Dir)
		}
	})
	ctx := context.Background()
	c, err := h.StartCluster(ctx, "mgmt-1")
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "x"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "probe", Name: "x"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/not-a-manager:v1"}}}}},
	}
	if err := c.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	waitFor(t, 2*time.Minute, "a bound pod of the Deployment reporting ImageNotRunnable", func() bool {
		pods := &corev1.PodList{}
		if err := c.Client.List(ctx, pods, client.InNamespace("probe")); err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		cs := pod.Status.ContainerStatuses
		return pod.Spec.NodeName == NodeName && len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ImageNotRunnable"
	})
	if err := c.Client.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, "the namespace controller to empty and remove the namespace", func() bool {
		return apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKey{Name: "probe"}, &corev1.Namespace{}))
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
