package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/fleetupgrade"
)

// TestFleetChainedKubernetesUpgradeLive: one in-memory ClusterClass cluster at k8sVersion whose
// ClusterClass lists spec.kubernetesVersions (k8sVersion, v1.35.0, v1.36.0), upgraded two minors
// at once by `capctl upgrade apply --kubernetes-version v1.36.0`. capctl sets
// spec.topology.version to the target once; the real topology controller computes the plan
// (status.controlPlane.upgradePlan: v1.35.0, v1.36.0; workers: v1.36.0, the skew policy lets
// them skip v1.35) and walks it, the kubeadm control plane and MachineDeployment controllers
// replace the Machines. capctl reports each version of the plan as a step with its seconds. No
// feature gate beyond ClusterTopology is needed: in v1.14 the topology controller plans from the
// ClusterClass's versions by itself (only a GenerateUpgradePlan runtime extension needs RuntimeSDK).
func TestFleetChainedKubernetesUpgradeLive(t *testing.T) {
	const (
		chainNS = "chained"
		name    = "ch-1"
		middle  = "v1.35.0"
		target  = "v1.36.0"
	)
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	e.createCluster(mgmt, chainNS, name, k8sVersion, 1)
	e.waitAvailable(mgmt, chainNS, name, 5*time.Minute)
	ctx := context.Background()

	// The ClusterClass author lists the versions the class supports, as an operator would with
	// `kubectl patch clusterclass in-memory --type merge -p '{"spec":{"kubernetesVersions":[...]}}'`.
	cc := &unstructured.Unstructured{}
	cc.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
	cc.SetNamespace(chainNS)
	cc.SetName("in-memory")
	body := fmt.Sprintf(`{"spec":{"kubernetesVersions":[%q,%q,%q]}}`, k8sVersion, middle, target)
	if err := mgmt.Client.Patch(ctx, cc, client.RawPatch(types.MergePatchType, []byte(body))); err != nil {
		t.Fatalf("listing kubernetesVersions in the ClusterClass: %v", err)
	}

	before := machineVersions(t, mgmt, chainNS)
	if len(before) != 2 {
		t.Fatalf("want 2 Machines (1 control plane + 1 worker), got %v", before)
	}
	plan := e.mustCapctl(mgmt, "upgrade", "plan", "--kubernetes-version", target, "-n", chainNS)
	if !strings.Contains(plan, "1 cluster(s) in 1 wave(s), 0 cannot be planned") || !strings.Contains(plan, middle) {
		t.Fatalf("plan does not go through %s:\n%s", middle, plan)
	}

	// What the controllers do, seen independently of capctl: the versions the control plane
	// object was asked and the plans the topology controller published.
	watch := &versionWatch{}
	wctx, stopWatch := context.WithCancel(ctx)
	go watch.run(wctx, t, mgmt, chainNS, name)

	start := time.Now()
	out := e.mustCapctl(mgmt, "upgrade", "apply", "--kubernetes-version", target, "-n", chainNS,
		"--timeout", "15m", "-o", "json")
	total := time.Since(start)
	stopWatch()
	rep := fleetReport(t, out)
	if len(rep.Waves) != 1 || len(rep.Waves[0].Clusters) != 1 {
		t.Fatalf("waves %+v", rep.Waves)
	}
	c := rep.Waves[0].Clusters[0]
	if c.Result != fleetupgrade.ResultUpgraded {
		t.Errorf("cluster %s: %s", c.Name, c.Result)
	}
	var got []string
	for _, s := range c.Steps {
		t.Logf("  step %s %s: %.1fs (done %v, topology plan %v, patched %v)", s.Component, s.Version, s.Seconds, s.Done, s.TopologyPlan, s.Patched)
		got = append(got, s.Component+" "+s.Version)
		if !s.Done || !s.TopologyPlan {
			t.Errorf("step %s %s: done %v, topology plan %v", s.Component, s.Version, s.Done, s.TopologyPlan)
		}
	}
	want := []string{fleetupgrade.ControlPlane + " " + middle, fleetupgrade.ControlPlane + " " + target, fleetupgrade.Workers + " " + target}
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	if len(c.Steps) > 0 && !slices.Equal(c.Steps[0].Patched, []string{"Cluster " + name + " spec.topology.version"}) {
		t.Errorf("first step patched %v, want the Cluster's spec.topology.version only", c.Steps[0].Patched)
	}
	t.Logf("cluster %s, %s -> %s through %s: %s in %.1fs (wave %.1fs, command %s)", name, k8sVersion, target, middle,
		c.Result, c.Seconds, rep.Waves[0].Seconds, total.Round(100*time.Millisecond))
	for _, line := range []string{"): control plane " + middle + " -> control plane " + target + " -> workers " + target,
		"control plane " + middle + " done in", "control plane " + target + " done in", "workers " + target + " done in"} {
		if !strings.Contains(out, line) {
			t.Errorf("progress lacks %q", line)
		}
	}

	cpSeen, plans := watch.result()
	t.Logf("control plane spec.version seen: %v; topology controller plans seen: %v", cpSeen, plans)
	if !slices.Equal(cpSeen, []string{k8sVersion, middle, target}) {
		t.Errorf("the control plane went through %v, want %s, %s, %s", cpSeen, k8sVersion, middle, target)
	}
	// The plan is recomputed every reconcile and a version leaves it once applied: the one
	// published with the control plane at the middle version is (middle,) target for the
	// control plane and target alone for the workers (they skip the middle minor).
	if !slices.Contains(plans, "controlPlane=["+target+"] workers=["+target+"]") &&
		!slices.Contains(plans, "controlPlane=["+middle+" "+target+"] workers=["+target+"]") {
		t.Errorf("the topology controller never published a plan through %s to %s with the workers going straight to %s: %v", middle, target, target, plans)
	}
	assertReplaced(t, before, machineVersions(t, mgmt, chainNS), target)
	e.waitAvailable(mgmt, chainNS, name, time.Minute)

	// The same command again finds the cluster at the target and patches nothing.
	gens := generationsOf(t, mgmt, chainNS)
	again := e.mustCapctl(mgmt, "upgrade", "apply", "--kubernetes-version", target, "-n", chainNS, "-o", "json")
	rr := fleetReport(t, again)
	if r := rr.Waves[0].Clusters[0]; r.Result != fleetupgrade.ResultUpToDate || len(r.Steps) != 0 {
		t.Errorf("re-run: %s, steps %+v", r.Result, r.Steps)
	}
	if now := generationsOf(t, mgmt, chainNS); !maps.Equal(gens, now) {
		t.Errorf("the re-run changed specs: generations %v, then %v", gens, now)
	}
}

func fleetReport(t *testing.T, out string) fleetupgrade.FleetApplyReport {
	t.Helper()
	i := strings.Index(out, "{\n")
	if i < 0 {
		t.Fatalf("no JSON report in:\n%s", out)
	}
	var rep fleetupgrade.FleetApplyReport
	if err := json.Unmarshal([]byte(out[i:]), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	return rep
}

// assertReplaced checks that the Machines after an upgrade are as many as before, all new, and
// all at target.
func assertReplaced(t *testing.T, before, after map[string]string, target string) {
	t.Helper()
	for m, v := range after {
		if v != target {
			t.Errorf("Machine %s runs %s after the upgrade", m, v)
		}
		if _, old := before[m]; old {
			t.Errorf("Machine %s was not replaced", m)
		}
	}
	if len(after) != len(before) {
		t.Errorf("Machines after the upgrade: %v, before: %v", after, before)
	}
}

// versionWatch records, while capctl runs, the distinct spec.version values of the cluster's
// control plane and the upgrade plans in the Cluster's status, in the order they appear.
type versionWatch struct {
	mu    sync.Mutex
	cp    []string
	plans []string
}

func (w *versionWatch) run(ctx context.Context, t *testing.T, c *livemgmt.Cluster, ns, name string) {
	kcp := schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlane"}
	for ctx.Err() == nil {
		if cl, err := getCluster(ctx, c, ns, name); err == nil {
			plan := fmt.Sprintf("controlPlane=%v workers=%v", statusPlan(cl, "controlPlane"), statusPlan(cl, "workers"))
			cpName, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
			cp := &unstructured.Unstructured{}
			cp.SetGroupVersionKind(kcp)
			var v string
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cpName}, cp); err == nil {
				v, _, _ = unstructured.NestedString(cp.Object, "spec", "version")
			}
			w.mu.Lock()
			if v != "" && (len(w.cp) == 0 || w.cp[len(w.cp)-1] != v) {
				w.cp = append(w.cp, v)
			}
			if plan != "controlPlane=[] workers=[]" && !slices.Contains(w.plans, plan) {
				w.plans = append(w.plans, plan)
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *versionWatch) result() ([]string, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.cp...), append([]string(nil), w.plans...)
}

func statusPlan(cl *unstructured.Unstructured, part string) []string {
	items, _, _ := unstructured.NestedSlice(cl.Object, "status", part, "upgradePlan")
	out := []string{}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["version"]))
		}
	}
	return out
}

// generationsOf maps the Cluster API objects of ns (Clusters, control planes, MachineDeployments)
// to their metadata.generation, which only a spec change moves.
func generationsOf(t *testing.T, c *livemgmt.Cluster, ns string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, it := range fleetObjects(t, c.Client, ns) {
		out[it.GetKind()+"/"+it.GetName()] = it.GetGeneration()
	}
	return out
}

// fleetObjects lists the Clusters, control planes and MachineDeployments of ns.
func fleetObjects(t *testing.T, c client.Client, ns string) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
	for _, gvk := range []schema.GroupVersionKind{
		clusterGVK.GroupVersion().WithKind("ClusterList"),
		{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlaneList"},
		clusterGVK.GroupVersion().WithKind("MachineDeploymentList"),
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := c.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out = append(out, l.Items...)
	}
	return out
}
