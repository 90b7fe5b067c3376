package topology_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/topology"
)

// standInTopology does, on envtest where no controller runs, what the Cluster API controllers
// report that topology apply waits for: every ClusterClass reconciled (status.observedGeneration)
// and every Cluster Available with its latest spec reconciled by the topology controller.
func standInTopology(ctx context.Context, c client.Client, moved *atomic.Int32) {
	for ctx.Err() == nil {
		for _, kind := range []string{"ClusterClass", "Cluster"} {
			l := &unstructured.UnstructuredList{}
			l.SetAPIVersion("cluster.x-k8s.io/v1beta2")
			l.SetKind(kind + "List")
			if err := c.List(ctx, l); err != nil {
				continue
			}
			for i := range l.Items {
				u := &l.Items[i]
				og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
				if og == u.GetGeneration() {
					continue
				}
				st := map[string]any{"observedGeneration": u.GetGeneration()}
				if kind == "Cluster" {
					now := time.Now().UTC().Format(time.RFC3339)
					st["conditions"] = []any{
						map[string]any{"type": "Available", "status": "True", "reason": "Available", "message": "", "lastTransitionTime": now, "observedGeneration": u.GetGeneration()},
						map[string]any{"type": "TopologyReconciled", "status": "True", "reason": "ReconcileSucceeded", "message": "", "lastTransitionTime": now, "observedGeneration": u.GetGeneration()},
					}
					if name, _, _ := unstructured.NestedString(u.Object, "spec", "topology", "classRef", "name"); name != "in-memory" {
						moved.Add(1)
					}
				}
				u.Object["status"] = st
				_ = c.Status().Update(ctx, u)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestApplyCreatesRebasesAndResumes: topology apply of a saved plan on an API server. Without a
// controller to reconcile the new class the run stops before moving any cluster and deletes the
// class and template it created (the API server as before). With the stand-in, the changed
// template and the class are created under new names (the class referencing the renamed
// template, the old class untouched), both clusters move, and the run is recorded; the same
// command again reuses the objects and moves nothing twice.
func TestApplyCreatesRebasesAndResumes(t *testing.T) {
	te, dir := planEnv(t)
	ctx := testenv.Context(t)
	class := liveClass(t, te)
	mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	tmplName, _, _ := unstructured.NestedString(mds[0].(map[string]any), "infrastructure", "templateRef", "name")
	tmplKind, _, _ := unstructured.NestedString(mds[0].(map[string]any), "infrastructure", "templateRef", "kind")
	tmpl := &unstructured.Unstructured{}
	tmpl.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
	tmpl.SetKind(tmplKind)
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: tmplName}, tmpl); err != nil {
		t.Fatal(err)
	}
	changed := &unstructured.Unstructured{Object: map[string]any{"apiVersion": tmpl.GetAPIVersion(), "kind": tmplKind, "spec": tmpl.Object["spec"]}}
	changed.SetNamespace("fleet")
	changed.SetName(tmplName + "-v2")
	_ = unstructured.SetNestedField(changed.Object, "4s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), changed.GetName(), "infrastructure", "templateRef", "name")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	file := writeObjects(t, dir, "change.json", changed, class)
	planPath := filepath.Join(dir, "plan.json")
	if _, err := topology.Plan(ctx, env.One(te.Client), topology.PlanRequest{Files: []string{file}, Concurrency: 2, Save: planPath}); err != nil {
		t.Fatal(err)
	}
	oldClass := &unstructured.Unstructured{}
	oldClass.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	oldClass.SetKind("ClusterClass")
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "in-memory"}, oldClass); err != nil {
		t.Fatal(err)
	}

	// No controller: the new class is never reconciled, so nothing is moved and what was created
	// is deleted.
	var lines []string
	e := env.One(te.Client)
	e.Progress = func(s string) { lines = append(lines, s) }
	req := topology.ApplyRequest{Plan: planPath, ClassName: "in-memory-v2", ClassTimeout: 2 * time.Second, Timeout: 20 * time.Second, PollInterval: 100 * time.Millisecond,
		Rollout: fleetupgrade.Rollout{MaxParallel: 2}}
	before := testenv.Snapshot(t, te.Client)
	if _, err := topology.Apply(ctx, e, req); err == nil || !strings.Contains(err.Error(), "was not reconciled by the Cluster API controller") {
		t.Fatalf("apply without a controller: %v", err)
	}
	testenv.Unchanged(t, te.Client, before, "a topology apply that could not move a cluster")
	if got := strings.Join(lines, "\n"); !strings.Contains(got, "deleted ClusterClass fleet/in-memory-") || !strings.Contains(got, "deleted "+tmplKind+" fleet/"+tmplName+"-v2-") {
		t.Errorf("the undo is not reported:\n%s", got)
	}

	// Without a permission a step needs (here: creating ClusterClasses), refused before the first
	// write, naming it.
	te.GrantAllBut(t, "no-class-create", map[string][]string{"clusterclasses.cluster.x-k8s.io": {"create"}})
	before = testenv.Snapshot(t, te.Client)
	if _, err := topology.Apply(ctx, env.One(te.User(t, "no-class-create")), req); err == nil || !strings.Contains(err.Error(), "clusterclasses") || !strings.Contains(err.Error(), "create") {
		t.Errorf("without create on ClusterClasses: %v", err)
	}
	testenv.Unchanged(t, te.Client, before, "a topology apply refused for a missing permission")

	// A class of the new name not made from this plan: refused, and the template this run
	// created before it is deleted again.
	foreign := class.DeepCopy()
	foreign.SetName("in-memory-v2")
	if err := te.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	before = testenv.Snapshot(t, te.Client)
	lines = nil
	if _, err := topology.Apply(ctx, e, req); err == nil || !strings.Contains(err.Error(), "ClusterClass fleet/in-memory-v2 exists and was not made from this plan: choose another class name with --class-name") {
		t.Errorf("a foreign class of the new name: %v", err)
	}
	testenv.Unchanged(t, te.Client, before, "a topology apply refused by a foreign class")
	if err := te.Client.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}

	sctx, stop := context.WithCancel(ctx)
	defer stop()
	var moved atomic.Int32
	go standInTopology(sctx, te.Client, &moved)
	lines = nil
	rep, err := topology.Apply(ctx, e, req)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, strings.Join(lines, "\n"))
	}
	to := strings.TrimPrefix(rep.ClassRebase, "fleet/in-memory -> ")
	if to != "in-memory-v2" || rep.Record == "" {
		t.Fatalf("report %+v", rep)
	}
	for _, w := range rep.Waves {
		for _, c := range w.Clusters {
			// The clusters were never reconciled: the plan predicts objects created, no machine
			// replaced, and none was (the live test holds a rollout's prediction to the controllers).
			if s := c.Steps; c.Result != fleetupgrade.ResultRebased || len(s) != 1 || fmt.Sprint(s[0].Predicted, s[0].Replaced) != "[] []" || s[0].PredictionHeld == nil || !*s[0].PredictionHeld {
				t.Errorf("%s: %s, steps %+v", c.Name, c.Result, c.Steps)
			}
		}
	}
	newClass := &unstructured.Unstructured{}
	newClass.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	newClass.SetKind("ClusterClass")
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: to}, newClass); err != nil {
		t.Fatal(err)
	}
	nmds, _, _ := unstructured.NestedSlice(newClass.Object, "spec", "workers", "machineDeployments")
	if ref, _, _ := unstructured.NestedString(nmds[0].(map[string]any), "infrastructure", "templateRef", "name"); !strings.HasPrefix(ref, tmplName+"-v2-") || len(ref) != len(tmplName)+len("-v2-")+8 {
		t.Errorf("the new class references %s, want the renamed template %s-v2-DIGEST", ref, tmplName)
	}
	if a := newClass.GetAnnotations(); a[topology.PlanAnnotation] == "" || a[topology.RebasedFromAnnotation] != "in-memory" {
		t.Errorf("new class annotations %v", a)
	}
	gens := map[string]int64{}
	for _, n := range []string{"c-1", "c-2"} {
		cl := &unstructured.Unstructured{}
		cl.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		cl.SetKind("Cluster")
		if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: n}, cl); err != nil {
			t.Fatal(err)
		}
		if ref, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name"); ref != to {
			t.Errorf("%s uses %s, want %s", n, ref, to)
		}
		gens[n] = cl.GetGeneration()
	}
	check := &unstructured.Unstructured{}
	check.SetGroupVersionKind(oldClass.GroupVersionKind())
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "in-memory"}, check); err != nil || check.GetGeneration() != oldClass.GetGeneration() {
		t.Errorf("the old class changed: %v, generation %d -> %d", err, oldClass.GetGeneration(), check.GetGeneration())
	}

	// The same command again, with --prune-old-class: the objects made from this plan are
	// reused, nothing is moved, and the old class, used by no Cluster now, is deleted.
	lines = nil
	prune := req
	prune.PruneOldClass = true
	rep, err = topology.Apply(ctx, e, prune)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	got := strings.Join(lines, "\n")
	if !strings.Contains(got, "ClusterClass fleet/"+to+" exists, made from this plan: reused") || !strings.Contains(got, "Deleted the old ClusterClass fleet/in-memory: no Cluster uses it") {
		t.Errorf("the re-run does not reuse the class or prune the old one:\n%s", got)
	}
	for _, w := range rep.Waves {
		for _, c := range w.Clusters {
			if c.Result != fleetupgrade.ResultUpToDate {
				t.Errorf("re-run: %s %s", c.Name, c.Result)
			}
		}
	}
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "in-memory"}, check); !apierrors.IsNotFound(err) {
		t.Errorf("the old class after --prune-old-class: %v", err)
	}
	// A rollback needs the old class.
	back := req
	back.Rollback = true
	if _, err := topology.Apply(ctx, e, back); err == nil || !strings.Contains(err.Error(), "ClusterClass fleet/in-memory, the class the plan was made from, does not exist: a rollback needs it") {
		t.Errorf("a rollback without the old class: %v", err)
	}
	for n, g := range gens {
		cl := &unstructured.Unstructured{}
		cl.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		cl.SetKind("Cluster")
		if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: n}, cl); err != nil || cl.GetGeneration() != g {
			t.Errorf("the re-run changed %s: %v, generation %d -> %d", n, err, g, cl.GetGeneration())
		}
	}
}
