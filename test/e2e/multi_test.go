package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
)

// TestThreeManagementClustersLive runs three live management clusters at once, each with its
// own CAPD in its own network namespace and its own workload cluster reaching Available. One
// cluster then moves from mgmt-1 to mgmt-2 with capctl: on mgmt-2 it is Available again with
// the same Machines, nothing of it stays on mgmt-1, and both keep reconciling (a scale-up on
// each makes a new Machine), while mgmt-2's own cluster and mgmt-3's stay Available.
func TestThreeManagementClustersLive(t *testing.T) {
	e := start(t, 3)
	if !e.host.Isolated() {
		t.Skipf("the management clusters share one CAPD here (%s): three cannot reconcile on their own", e.host.Shared())
	}
	m1, m2, m3 := e.clusters[0], e.clusters[1], e.clusters[2]
	names := map[string]bool{}
	for _, c := range e.clusters {
		if c.Namespace() == "" || names[c.Namespace()] {
			t.Fatalf("management cluster %s has network namespace %q (all: %v)", c.Name, c.Namespace(), names)
		}
		names[c.Namespace()] = true
	}
	parallel(func() { e.initAt(m1, "v1.14.0") }, func() { e.initAt(m2, "v1.14.0") }, func() { e.initAt(m3, "v1.14.0") })
	if t.Failed() {
		t.FailNow()
	}
	ctx := context.Background()
	const stay, moving, own2, own3 = "stay", "moving", "own-2", "own-3"
	// Each CAPD numbers its workload endpoints from 20000: mgmt-1's cluster that stays takes
	// the first, so the one that moves holds another port than mgmt-2's own cluster.
	e.createCluster(m1, stay, "s-1", k8sVersion, 1)
	waitEndpoint(t, m1, stay, "s-1")
	e.createCluster(m1, moving, "mv-1", k8sVersion, 1)
	e.createCluster(m2, own2, "b-1", k8sVersion, 1)
	e.createCluster(m3, own3, "c-1", k8sVersion, 1)
	parallel(
		func() { e.waitAvailableE(m1, stay, "s-1", 5*time.Minute) },
		func() { e.waitAvailableE(m1, moving, "mv-1", 5*time.Minute) },
		func() { e.waitAvailableE(m2, own2, "b-1", 5*time.Minute) },
		func() { e.waitAvailableE(m3, own3, "c-1", 5*time.Minute) },
	)
	if t.Failed() {
		t.FailNow()
	}
	checkOwnCAPD(ctx, t, e.clusters)

	before := machineIDs(ctx, t, m1, moving)
	e.moveHandingOver(m1, m2, moving, "mv-1")
	parallel(
		func() { e.waitAvailableE(m2, moving, "mv-1", 5*time.Minute) },
		func() { e.waitAvailableE(m2, own2, "b-1", 5*time.Minute) },
		func() { e.waitAvailableE(m1, stay, "s-1", 5*time.Minute) },
		func() { e.waitAvailableE(m3, own3, "c-1", 5*time.Minute) },
	)
	if t.Failed() {
		t.FailNow()
	}
	checkOwnCAPD(ctx, t, e.clusters)
	if after := machineIDs(ctx, t, m2, moving); !equalStrings(before, after) {
		t.Errorf("Machines (name=providerID) before the move on mgmt-1:\n  %s\nafter it on mgmt-2:\n  %s", strings.Join(before, "\n  "), strings.Join(after, "\n  "))
	}
	for _, k := range leftovers(t, m1, moving) {
		t.Errorf("left on mgmt-1 after the move: %s", k)
	}

	// Both sides reconcile on their own: one more worker on each appears and runs.
	parallel(
		func() { e.scaleAndWait(m1, stay, "s-1", len(machineIDs(ctx, t, m1, stay))+1) },
		func() { e.scaleAndWait(m2, moving, "mv-1", len(before)+1) },
	)
}

// scaleAndWait adds a worker through the topology and waits until want Machines run.
func (e *e2e) scaleAndWait(c *livemgmt.Cluster, ns, name string, want int) {
	ctx := context.Background()
	u, err := getCluster(ctx, c, ns, name)
	if err != nil {
		e.t.Errorf("%s: %v", c.Name, err)
		return
	}
	if msg := scaleWorkers(ctx, c, u, 1); msg != "" {
		e.t.Errorf("scaling %s/%s on %s: %s", ns, name, c.Name, msg)
		return
	}
	start := time.Now()
	running := 0
	for time.Since(start) < 4*time.Minute {
		ms, _ := listMachines(ctx, c, ns)
		running = 0
		for _, m := range ms {
			if p, _, _ := unstructured.NestedString(m.Object, "status", "phase"); p == "Running" {
				running++
			}
		}
		if running >= want {
			e.t.Logf("%s/%s on %s: %d Machines Running %s after the scale-up", ns, name, c.Name, running, time.Since(start).Round(time.Second))
			return
		}
		time.Sleep(2 * time.Second)
	}
	e.t.Errorf("%s/%s on %s: %d of %d Machines Running 4m after the scale-up\n%s", ns, name, c.Name, running, want,
		e.host.Diagnose(ctx, c, capctlBin, ns, name))
}

// machineIDs lists the Machines of ns as name=providerID, sorted.
func machineIDs(ctx context.Context, t *testing.T, c *livemgmt.Cluster, ns string) []string {
	ms, err := listMachines(ctx, c, ns)
	if err != nil {
		t.Errorf("listing Machines on %s: %v", c.Name, err)
	}
	var out []string
	for _, m := range ms {
		id, _, _ := unstructured.NestedString(m.Object, "spec", "providerID")
		out = append(out, m.GetName()+"="+id)
	}
	sort.Strings(out)
	return out
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, "\n") == strings.Join(b, "\n")
}

// waitEndpoint waits until CAPD gave the cluster's DevCluster its workload endpoint.
func waitEndpoint(t *testing.T, c *livemgmt.Cluster, ns, name string) {
	t.Helper()
	waitFor(t, 2*time.Minute, "the DevCluster of "+ns+"/"+name+" to get its endpoint", func() bool {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevClusterList"})
		if c.Client.List(context.Background(), l, client.InNamespace(ns)) != nil {
			return false
		}
		for _, dc := range l.Items {
			if p, _, _ := unstructured.NestedInt64(dc.Object, "spec", "controlPlaneEndpoint", "port"); p > 0 {
				return true
			}
		}
		return false
	})
}

// checkOwnCAPD checks that each management cluster runs a CAPD process of its own, Ready, in
// its own network namespace.
func checkOwnCAPD(ctx context.Context, t *testing.T, clusters []*livemgmt.Cluster) {
	t.Helper()
	seen := map[string]string{}
	for _, c := range clusters {
		pid := c.ManagerPID(livemgmt.LabelDocker)
		netns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if pid == 0 || err != nil || !capdReady(ctx, c) {
			t.Errorf("%s: no Ready CAPD process of its own (pid %d, %v)", c.Name, pid, err)
			continue
		}
		if other, dup := seen[netns]; dup {
			t.Errorf("%s's CAPD shares network %s with %s's", c.Name, netns, other)
		}
		seen[netns] = c.Name
		t.Logf("%s: CAPD pid %d in network namespace %s (%s)", c.Name, pid, c.Namespace(), netns)
	}
}
