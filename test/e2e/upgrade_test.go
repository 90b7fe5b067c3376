package e2e

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/internal/testing/livemgmt"
)

// TestUpgradeApplyLive: providers at v1.13.5 (run by v1.13.5 managers), a cluster Available, then
// `capctl upgrade apply --contract v1beta2` to v1.14.0: the Deployments roll, the new pods run the
// v1.14 managers (v1.14.2 binaries: the proxy serves no v1.14.0 test module), and those
// controllers keep the cluster Available and scale it.
func TestUpgradeApplyLive(t *testing.T) {
	e := start(t, 1, "v1.14.2", "v1.13.5")
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.13.5")
	if t.Failed() {
		t.FailNow()
	}
	if got := managerVersions(t, mgmt); !allMinor(got, "v1.13.") {
		t.Fatalf("after init at v1.13.5 the managers run %v", got)
	}
	e.createCluster(mgmt, ns, "wl-up", k8sVersion, 1)
	e.waitAvailable(mgmt, ns, "wl-up", 5*time.Minute)

	e.mustCapctl(mgmt, "upgrade", "apply", "--contract", "v1beta2")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		got := managerVersions(t, mgmt)
		if len(got) == 4 && allMinor(got, "v1.14.") {
			t.Logf("managers after the upgrade: %v", got)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the providers' pods did not roll to v1.14 managers: %v\n%s", got, e.host.Diagnose(context.Background(), mgmt, capctlBin, ns, "wl-up"))
		}
		time.Sleep(2 * time.Second)
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
	if err := mgmt.Client.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	for _, p := range l.Items {
		if v, _, _ := unstructured.NestedString(p.Object, "version"); v != "v1.14.0" {
			t.Errorf("provider %s/%s is at %s after the upgrade, want v1.14.0", p.GetNamespace(), p.GetName(), v)
		}
	}
	e.waitAvailable(mgmt, ns, "wl-up", 5*time.Minute)

	// The new controllers act on the old cluster: one more worker through the topology.
	ctx := context.Background()
	u, err := getCluster(ctx, mgmt, ns, "wl-up")
	if err != nil {
		t.Fatal(err)
	}
	if msg := scaleWorkers(ctx, mgmt, u, 1); msg != "" {
		t.Fatalf("scaling the workers after the upgrade: %s", msg)
	}
	deadline = time.Now().Add(4 * time.Minute)
	for {
		ms, err := listMachines(ctx, mgmt, ns)
		if err == nil && len(ms) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the v1.14 controllers did not create the third Machine (%d Machines)\n%s", len(ms), e.host.Diagnose(ctx, mgmt, capctlBin, ns, "wl-up"))
		}
		time.Sleep(2 * time.Second)
	}
	e.waitAvailable(mgmt, ns, "wl-up", 5*time.Minute)
}

// managerVersions lists "label@version" of the manager binaries the providers' pods run (as
// the kubelet stand-in reports them in the container's imageID), one per pod.
func managerVersions(t *testing.T, c *livemgmt.Cluster) []string {
	t.Helper()
	pods := &corev1.PodList{}
	if err := c.Client.List(context.Background(), pods); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if id, ok := strings.CutPrefix(cs.ImageID, "livemgmt://"); ok {
				if !cs.Ready {
					id += "(not ready)"
				}
				out = append(out, id)
			}
		}
	}
	sort.Strings(out)
	return out
}

func allMinor(vs []string, minor string) bool {
	if len(vs) == 0 {
		return false
	}
	for _, v := range vs {
		if !strings.Contains(v, "@"+minor) || strings.HasSuffix(v, "(not ready)") {
			return false
		}
	}
	return true
}
