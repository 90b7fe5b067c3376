package fleetupgrade

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRebaseDrift: a planned cluster recreated, on another class, changed or gone is drift; one
// on the new class (a resumed run moved it) is not; clusters the plan did not compute are not
// selected.
func TestRebaseDrift(t *testing.T) {
	r := Rebase{Namespace: "prod", From: "qs", To: "qs-2", Clusters: []RebaseCluster{
		{Namespace: "prod", Name: "a", UID: "u-a", Generation: 3}, {Namespace: "prod", Name: "b", UID: "u-b", Generation: 3},
		{Namespace: "prod", Name: "c", UID: "u-c", Generation: 3}, {Namespace: "prod", Name: "d", UID: "u-d", Generation: 3},
		{Namespace: "prod", Name: "gone", UID: "u-g", Generation: 1}, {Namespace: "prod", Name: "moved", UID: "u-m", Generation: 3},
	}}
	info := func(name, uid, class string, gen int64) ClusterInfo {
		return ClusterInfo{Namespace: "prod", Name: name, UID: uid, ClusterClass: class, Generation: gen}
	}
	infos := []ClusterInfo{info("a", "u-a", "prod/qs", 3), info("b", "u-b2", "prod/qs", 1), info("c", "u-c", "prod/other", 3),
		info("d", "u-d", "prod/qs", 4), info("moved", "u-m", "prod/qs-2", 4), info("unplanned", "u-x", "prod/qs", 9)}
	got := strings.Join(r.Drift(infos), "\n")
	for _, want := range []string{"prod/b: the Cluster was recreated", "prod/c: the Cluster uses ClusterClass prod/other", "prod/d: the Cluster's spec changed since the plan (generation 4, planned at 3)", "prod/gone: not found"} {
		if !strings.Contains(got, want) {
			t.Errorf("drift\n%s\nlacks %q", got, want)
		}
	}
	if strings.Contains(got, "prod/a:") || strings.Contains(got, "moved") || strings.Contains(got, "unplanned") {
		t.Errorf("drift names a cluster as planned or not planned:\n%s", got)
	}
	rb, err := r.resolve()
	if err != nil {
		t.Fatal(err)
	}
	plan := buildPlan(infos, rb)
	n := 0
	for _, w := range plan.Waves {
		n += len(w.Clusters)
	}
	if n != 2 || len(plan.Unplannable) != 3 || plan.ClassRebase != "prod/qs -> qs-2" {
		t.Errorf("plan: %d clusters, unplannable %+v, %q", n, plan.Unplannable, plan.ClassRebase)
	}
	if err := (Rebase{From: "qs", To: "qs", Clusters: r.Clusters}).check(); err == nil {
		t.Error("a rebase onto the same class accepted")
	}
}

// TestRebaseDone: done waits for the new class, the topology controller's reconcile of the
// latest generation and nothing pending; replacedSince names the parts all of whose Machines
// are newer than the move.
func TestRebaseDone(t *testing.T) {
	rb, _ := Rebase{Namespace: "prod", From: "qs", To: "qs-2", Clusters: []RebaseCluster{{Namespace: "prod", Name: "a"}}}.resolve()
	cl := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"topology": map[string]any{"classRef": map[string]any{"name": "qs-2"}}}}}
	cl.SetGeneration(4)
	conds := func(og int64) {
		cl.Object["status"] = map[string]any{"conditions": []any{
			map[string]any{"type": "Available", "status": "True"}, map[string]any{"type": "TopologyReconciled", "status": "True", "observedGeneration": og}}}
	}
	conds(3)
	if ok, why := rb.done(ClusterState{Cluster: cl}); ok || !strings.Contains(strings.Join(why, ";"), "generation 4, TopologyReconciled observed 3") {
		t.Errorf("done %v: %v", ok, why)
	}
	conds(4)
	if ok, why := rb.done(ClusterState{Cluster: cl}); !ok {
		t.Errorf("not done: %v", why)
	}
	move := time.Now()
	machine := func(name string, labels map[string]string, created time.Time) unstructured.Unstructured {
		m := unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "UpToDate", "status": "True"}}}}}
		m.SetName(name)
		m.SetLabels(labels)
		m.SetCreationTimestamp(metav1.NewTime(created))
		return m
	}
	md := unstructured.Unstructured{Object: map[string]any{"kind": "MachineDeployment"}}
	md.SetName("a-md-0-xyz")
	md.SetLabels(map[string]string{topologyMDLabel: "md-0"})
	s := ClusterState{Cluster: cl, Workers: []unstructured.Unstructured{md}, Machines: []unstructured.Unstructured{
		machine("cp-1", map[string]string{controlPlaneMachineLabel: ""}, move.Add(-time.Hour)),
		machine("md-1", map[string]string{deploymentNameLabel: "a-md-0-xyz"}, move.Add(time.Minute)),
		machine("md-2", map[string]string{deploymentNameLabel: "a-md-0-xyz"}, move.Add(2*time.Minute)),
	}}
	got := replacedSince(s, move)
	if strings.Join(got, ",") != "MachineDeployment md-0" {
		t.Errorf("replaced %v", got)
	}
	if held := predictionHeld([]string{"MachineDeployment md-0"}, got); !*held {
		t.Error("the prediction did not hold")
	}
	if held := predictionHeld([]string{"MachineDeployment md-0", "control plane"}, got); *held {
		t.Error("a control plane predicted to roll held without a new Machine")
	}
}
