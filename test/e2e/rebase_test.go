package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/topology"
)

// rebaseLive rolls a ClusterClass change out as a rebase (`topology apply --plan`) on the live
// clusters of TestTopologyPlanLive, with the real topology controller doing the work: a worker
// template change is planned and saved; a cluster changed after the plan refuses the apply,
// naming it, with nothing created; a new plan applied with --canary 1, a soak and a failing gate
// moves only the canary, whose worker Machines the controllers replace as predicted, and the
// history records it; --rollback then moves the canary back (its workers rolled back by the
// controllers) and leaves the others alone. (The interrupted and resumed rollout of a whole
// fleet is rebaseAcrossContextsLive's.)
func rebaseLive(t *testing.T, tp *topoPlan) {
	ctx := context.Background()
	c := tp.c
	classBefore := tp.live(classGVK, "in-memory")
	liveClass := &unstructured.Unstructured{}
	liveClass.SetGroupVersionKind(classGVK)
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: tp.ns, Name: "in-memory"}, liveClass); err != nil {
		t.Fatal(err)
	}
	worker := tp.live(gvk("infrastructure.cluster.x-k8s.io", "DevMachineTemplate"), "in-memory-default-worker-machinetemplate-v2")
	worker.SetName("in-memory-default-worker-machinetemplate-v3")
	_ = unstructured.SetNestedField(worker.Object, "3s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
	class := classBefore.DeepCopy()
	mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), worker.GetName(), "infrastructure", "templateRef", "name")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	change := filepath.Join(tp.dir, "rebase-change.yaml")
	writeObjects(t, change, worker, class)
	save := func(path string) *topology.PlanResult {
		out, err := tp.e.capctl(c, "topology", "plan", "-f", change, "--save", path, "-o", "json")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != topology.ExitChanges {
			t.Fatalf("topology plan --save: %v\n%s", err, out)
		}
		res := &topology.PlanResult{}
		if err := json.Unmarshal([]byte(jsonPart(out)), res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	classes := func() []string {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(classGVK.GroupVersion().WithKind("ClusterClassList"))
		if err := c.Client.List(ctx, l, client.InNamespace(tp.ns)); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range l.Items {
			out = append(out, i.GetName())
		}
		return out
	}
	classOf := func(name string) string {
		u, err := getCluster(ctx, c, tp.ns, name)
		if err != nil {
			t.Fatal(err)
		}
		n, _, _ := unstructured.NestedString(u.Object, "spec", "topology", "classRef", "name")
		return n
	}

	// A plan, then a cluster edited: refused, naming it; no class or template created.
	stale := filepath.Join(tp.dir, "rebase-stale.json")
	save(stale)
	setPaused(t, c.Client, tp.ns, "t-3", true)
	settled(t, c, tp.ns, "t-3")
	before := objectVersions(t, c.Client, tp.ns)
	classesBefore := classes()
	out, err := tp.e.capctl(c, "topology", "apply", "--plan", stale)
	if err == nil || !strings.Contains(out, "cluster topo/t-3: the Cluster's spec changed since the plan") || !strings.Contains(out, "capctl topology plan -f ... --save") {
		t.Fatalf("topology apply of a stale plan: %v\n%s", err, out)
	}
	if after := objectVersions(t, c.Client, tp.ns); !maps.Equal(before, after) {
		t.Errorf("a refused topology apply changed objects:\n%v\n%v", before, after)
	}
	if got := classes(); strings.Join(got, ",") != strings.Join(classesBefore, ",") {
		t.Errorf("a refused topology apply created classes: %v -> %v", classesBefore, got)
	}
	setPaused(t, c.Client, tp.ns, "t-3", false)
	waitFor(t, 2*time.Minute, "t-3 to be unpaused", func() bool {
		u, err := getCluster(ctx, c, tp.ns, "t-3")
		if err != nil {
			return false
		}
		st, _ := condition(u, "Paused")
		return st == "False"
	})
	tp.e.waitAvailable(c, tp.ns, "t-3", 5*time.Minute)

	// The reviewed plan, rolled with a canary and a failing gate.
	path := filepath.Join(tp.dir, "rebase.json")
	res := save(path)
	for _, cp := range res.Clusters {
		if cp.ControlPlane.RollsOut || len(cp.MachineDeployments) != 1 || !cp.MachineDeployments[0].RollsOut {
			t.Fatalf("plan of %s: control plane rolls %v, machine deployments %+v; want md-0 alone", cp.Name, cp.ControlPlane.RollsOut, cp.MachineDeployments)
		}
	}
	ok := filepath.Join(tp.dir, "rebase-ok")
	gate := `test -f ` + ok + ` || { echo "smoke test failed on $CAPCTL_CLUSTERS ($CAPCTL_CLUSTERCLASS_FROM -> $CAPCTL_CLUSTERCLASS)"; exit 1; }`
	args := []string{"topology", "apply", "--plan", path, "--canary", "1", "--max-parallel", "100%", "--soak", "5s", "--gate-command", gate, "--timeout", "8m", "-o", "json"}
	machinesBefore := map[string]machinesOf{}
	for _, n := range tp.names {
		machinesBefore[n] = tp.machines(n)
	}
	start := time.Now()
	out, err = tp.e.capctl(c, args...)
	first := time.Since(start)
	if err == nil {
		t.Fatalf("the failing gate did not stop the rebase:\n%s", out)
	}
	if !strings.Contains(out, "Wave canary: soaking 5s: 1 cluster(s) must stay Available") {
		t.Errorf("the canary's soak did not watch the canary:\n%s", out)
	}
	rep := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	to := strings.TrimPrefix(rep.ClassRebase, tp.ns+"/in-memory -> ")
	if !strings.HasPrefix(to, "in-memory-") || rep.Stop == nil || rep.Stop.Gate != fleetupgrade.GateCommand ||
		strings.Join(rep.Stop.Details, "") != "smoke test failed on topo/t-1 (in-memory -> "+to+")" {
		t.Fatalf("rebase %q stopped %+v", rep.ClassRebase, rep.Stop)
	}
	if g := rep.Waves[0].Gates; len(g) != 2 || g[0].Gate != fleetupgrade.GateSoak || !g[0].Passed || g[1].Passed {
		t.Errorf("canary gates %+v: want a passed 5s soak, then the failed gate command", g)
	}
	canary := rep.Waves[0].Clusters[0]
	if canary.Name != "t-1" || canary.Result != fleetupgrade.ResultRebased || len(canary.Steps) != 1 {
		t.Fatalf("canary %+v", canary)
	}
	if s := canary.Steps[0]; s.PredictionHeld == nil || !*s.PredictionHeld || strings.Join(s.Replaced, ",") != "MachineDeployment md-0" {
		t.Errorf("canary step %+v: want md-0 replaced, as predicted", s)
	}
	if got := []string{classOf("t-1"), classOf("t-2"), classOf("t-3")}; got[0] != to || got[1] != "in-memory" || got[2] != "in-memory" {
		t.Errorf("after the canary the clusters use %v", got)
	}
	if !added(machinesBefore["t-1"].ms, tp.machines("t-1").ms) || added(machinesBefore["t-2"].ms, tp.machines("t-2").ms) {
		t.Errorf("after the canary: t-1's MachineSets %v -> %v, t-2's %v -> %v", machinesBefore["t-1"].ms, tp.machines("t-1").ms, machinesBefore["t-2"].ms, tp.machines("t-2").ms)
	}

	var recs []fleetupgrade.RolloutRecord
	if err := json.Unmarshal([]byte(tp.e.mustCapctl(c, "upgrade", "history", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Name != rep.Record || recs[0].ClassRebase != rep.ClassRebase || recs[0].State != fleetupgrade.RolloutStopped {
		t.Fatalf("history %+v", recs)
	}
	if c := recs[0].Waves[0].Clusters[0]; c.PredictionHeld == nil || !*c.PredictionHeld || strings.Join(c.Predicted, ",") != "MachineDeployment md-0" {
		t.Errorf("the record of the canary %+v: want the prediction that held", c)
	}

	// --rollback after the canary: it moves back onto the old class and the controllers roll its
	// workers back; the others, on the old class still, are left as they are.
	beforeBack := tp.machines("t-1")
	othersBefore := map[string]int64{}
	for _, n := range []string{"t-2", "t-3"} {
		u, err := getCluster(ctx, c, tp.ns, n)
		if err != nil {
			t.Fatal(err)
		}
		othersBefore[n] = u.GetGeneration()
	}
	start = time.Now()
	back := fleetReport(t, tp.e.mustCapctl(c, "topology", "apply", "--plan", path, "--rollback", "--timeout", "8m", "-o", "json"))
	for _, w := range back.Waves {
		for _, cl := range w.Clusters {
			want := fleetupgrade.ResultUpToDate
			if cl.Name == "t-1" {
				want = fleetupgrade.ResultRebased
			}
			if cl.Result != want {
				t.Errorf("rollback: %s %s, want %s", cl.Name, cl.Result, want)
			}
		}
	}
	if back.ClassRebase != tp.ns+"/"+to+" -> in-memory" {
		t.Errorf("rollback %q", back.ClassRebase)
	}
	for _, n := range tp.names {
		if got := classOf(n); got != "in-memory" {
			t.Errorf("%s uses ClusterClass %s after the rollback, want in-memory", n, got)
		}
	}
	for n, g := range othersBefore {
		if u, err := getCluster(ctx, c, tp.ns, n); err != nil || u.GetGeneration() != g {
			t.Errorf("the rollback changed %s, which the canary run had not moved: generation %d -> %d (%v)", n, g, u.GetGeneration(), err)
		}
	}
	if !added(beforeBack.ms, tp.machines("t-1").ms) {
		t.Errorf("the rollback did not roll the canary's workers back: MachineSets %v -> %v", beforeBack.ms, tp.machines("t-1").ms)
	}
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(classGVK)
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: tp.ns, Name: "in-memory"}, old); err != nil || old.GetGeneration() != liveClass.GetGeneration() {
		t.Errorf("the old class: %v, generation %d (was %d)", err, old.GetGeneration(), liveClass.GetGeneration())
	}
	t.Logf("rebase of the canary onto %s: %s (its soak and the failing gate included); its rollback %s", to, first.Round(time.Second), time.Since(start).Round(time.Second))
}

// rebaseAcrossContextsLive is the ClusterClass rollout of the issue that asked for it, on the
// fleet of TestFleetOverManagementClustersLive (four ClusterClass clusters over three management
// clusters, each with its own "in-memory" class): the upgrade's wave labels removed and one
// worker added to each cluster, a class change that rolls the control plane (a patch of its
// kubeadm configuration) and the MachineDeployments (a new worker template) is planned once over
// every context and saved; `topology apply --plan --all-contexts --canary 1 --soak 30s` with a
// failing gate rebases the canary alone, which the controllers roll as predicted, and stops; with
// the gate fixed the same command is interrupted (SIGINT) once the second wave has moved a
// cluster, and run again: every cluster ends on the new class with its Machines replaced by its
// own management cluster's controllers, none moved twice, the canary not rolled again, and each
// management cluster's history holds the three runs.
func rebaseAcrossContextsLive(e *e2e, ns string, where map[string]string) {
	t := e.t
	ctx := context.Background()
	byName := map[string]*livemgmt.Cluster{}
	for _, c := range e.clusters {
		byName[c.Name] = c
	}
	keys := slices.Sorted(maps.Keys(where))
	nameOf := func(key string) string { return strings.TrimPrefix(key, ns+"/") }
	tp := &topoPlan{e: e, c: e.clusters[0], ns: ns, dir: t.TempDir()}

	// --canary makes the first wave itself: the upgrade's wave labels go. A worker for each
	// cluster, so that the MachineDeployments' rollout replaces Machines.
	workers := []byte(`[{"op":"add","path":"/spec/topology/workers/machineDeployments/0/replicas","value":1}]`)
	unlabel, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{fleetupgrade.PlainWaveLabel: nil}}})
	for _, key := range keys {
		c := byName[where[key]]
		u, err := getCluster(ctx, c, ns, nameOf(key))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, unlabel)); err != nil {
			t.Fatal(err)
		}
		if err := c.Client.Patch(ctx, u, client.RawPatch(types.JSONPatchType, workers)); err != nil {
			t.Fatalf("adding a worker to %s: %v", key, err)
		}
	}
	var waits []func()
	for _, c := range e.clusters {
		n := 0
		for _, mc := range where {
			if mc == c.Name {
				n++
			}
		}
		waits = append(waits, func() { waitMachinesAvailable(t, c, ns, 2*n, 5*time.Minute) })
	}
	parallel(waits...)
	if t.Failed() {
		t.FailNow()
	}
	for _, key := range keys {
		e.waitAvailable(byName[where[key]], ns, nameOf(key), 5*time.Minute)
	}

	// The change: a patch of the control plane's kubeadm configuration, and a worker template
	// whose machines boot in 4 s instead of the tests' 3 s (templates are immutable, so a new one).
	class := tp.live(classGVK, "in-memory")
	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	patches = append(patches, map[string]any{"name": "control-plane-san", "definitions": []any{map[string]any{
		"selector": map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate",
			"matchResources": map[string]any{"controlPlane": true}},
		"jsonPatches": []any{map[string]any{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/certSANs/-", "value": "regions.example"}},
	}}})
	_ = unstructured.SetNestedSlice(class.Object, patches, "spec", "patches")
	mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	workerRef, _, _ := unstructured.NestedString(mds[0].(map[string]any), "infrastructure", "templateRef", "name")
	worker := tp.live(gvk("infrastructure.cluster.x-k8s.io", "DevMachineTemplate"), workerRef)
	worker.SetName(workerRef + "-regions")
	_ = unstructured.SetNestedField(worker.Object, "4s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), worker.GetName(), "infrastructure", "templateRef", "name")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	change := filepath.Join(tp.dir, "class.yaml")
	writeObjects(t, change, worker, class)
	path := filepath.Join(tp.dir, "plan.json")
	out, err := e.capctl(nil, "topology", "plan", "-f", change, "--all-contexts", "-n", ns, "--save", path, "-o", "json")
	if exitCode(err) != topology.ExitChanges {
		t.Fatalf("topology plan --all-contexts --save: exit %d\n%s", exitCode(err), out)
	}
	res := &topology.PlanResult{}
	if err := json.Unmarshal([]byte(jsonPart(out)), res); err != nil || len(res.Clusters) != len(where) {
		t.Fatalf("plan: %v, %d clusters (want %d)", err, len(res.Clusters), len(where))
	}
	for _, cp := range res.Clusters {
		if !cp.ControlPlane.RollsOut || len(cp.MachineDeployments) != 1 || !cp.MachineDeployments[0].RollsOut || cp.ManagementCluster != where[cp.Namespace+"/"+cp.Name] {
			t.Fatalf("plan of %s on %s: control plane rolls %v, machine deployments %+v; want both to", cp.Name, cp.ManagementCluster, cp.ControlPlane.RollsOut, cp.MachineDeployments)
		}
	}

	// Each cluster's Machines and MachineSets, and its Cluster.
	type state struct {
		machines, sets []string
		class          string
		generation     int64
	}
	read := func(key string) state {
		c := byName[where[key]]
		ms, err := listMachines(ctx, c, ns)
		if err != nil {
			t.Fatal(err)
		}
		var st state
		for _, m := range ms {
			if m.GetLabels()["cluster.x-k8s.io/cluster-name"] == nameOf(key) && m.GetDeletionTimestamp() == nil {
				st.machines = append(st.machines, m.GetName())
			}
		}
		slices.Sort(st.machines)
		tp.c = c
		st.sets = tp.machines(nameOf(key)).ms
		u, err := getCluster(ctx, c, ns, nameOf(key))
		if err != nil {
			t.Fatal(err)
		}
		st.class, _, _ = unstructured.NestedString(u.Object, "spec", "topology", "classRef", "name")
		st.generation = u.GetGeneration()
		return st
	}
	readAll := func() map[string]state {
		out := map[string]state{}
		for _, key := range keys {
			out[key] = read(key)
		}
		return out
	}
	before := readAll()

	ok := filepath.Join(tp.dir, "ok")
	gate := `test -f ` + ok + ` || { echo "smoke test failed on $CAPCTL_CLUSTERS"; exit 1; }`
	args := []string{"topology", "apply", "--plan", path, "--all-contexts", "--canary", "1", "--max-parallel", "2", "--soak", "30s",
		"--gate-command", gate, "--timeout", "8m", "-o", "json"}

	// The canary alone, then the failing gate.
	start := time.Now()
	out, err = e.capctl(nil, args...)
	first := time.Since(start)
	if err == nil {
		t.Fatalf("the failing gate did not stop the rebase:\n%s", out)
	}
	if !strings.Contains(out, "Wave canary: soaking 30s: 1 cluster(s) must stay Available") {
		t.Errorf("the canary's soak did not watch the canary:\n%s", out)
	}
	rep := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	to := strings.TrimPrefix(rep.ClassRebase, ns+"/in-memory -> ")
	if !strings.HasPrefix(to, "in-memory-") || rep.Stop == nil || rep.Stop.Gate != fleetupgrade.GateCommand || len(rep.Waves) != 2 ||
		rep.Waves[0].Wave != fleetupgrade.CanaryWave || len(rep.Waves[0].Clusters) != 1 || len(rep.Waves[1].Clusters) != 3 {
		t.Fatalf("rebase %q stopped %+v, waves %+v", rep.ClassRebase, rep.Stop, rep.Waves)
	}
	if g := rep.Waves[0].Gates; len(g) != 2 || g[0].Gate != fleetupgrade.GateSoak || !g[0].Passed || g[0].Seconds < 30 || g[1].Passed {
		t.Errorf("canary gates %+v: want a passed 30s soak, then the failed gate command", g)
	}
	cr := rep.Waves[0].Clusters[0]
	canary := cr.Namespace + "/" + cr.Name
	afterCanary := readAll()
	for _, key := range keys {
		b, a := before[key], afterCanary[key]
		if key == canary {
			held := len(cr.Steps) == 1 && cr.Steps[0].PredictionHeld != nil && *cr.Steps[0].PredictionHeld
			if cr.Result != fleetupgrade.ResultRebased || !held || a.class != to || !added(b.sets, a.sets) || len(replaced(b.machines, a.machines)) != 2 {
				t.Errorf("canary %s on %s: %+v; class %s, MachineSets %v -> %v, Machines %v -> %v", key, where[key], cr, a.class, b.sets, a.sets, b.machines, a.machines)
			}
			continue
		}
		if a.class != "in-memory" || a.generation != b.generation || added(b.sets, a.sets) || len(replaced(b.machines, a.machines)) != 0 {
			t.Errorf("%s on %s was touched by the canary run: %+v -> %+v", key, where[key], b, a)
		}
	}
	for _, w := range rep.Waves[1:] {
		for _, c := range w.Clusters {
			if c.Result != fleetupgrade.ResultNotStarted {
				t.Errorf("after the canary: %s %s, want %s", c.Name, c.Result, fleetupgrade.ResultNotStarted)
			}
		}
	}

	// The gate fixed: the same command, interrupted (SIGINT) once the second wave has moved a
	// cluster.
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	run := e.startCapctl(nil, args...)
	if !run.waitOutput(": moved to ClusterClass "+to, 5*time.Minute) {
		_, stderr, err := run.wait()
		t.Fatalf("the second wave moved no cluster (exit %v):\n%s", err, stderr)
	}
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run.wait()
	interrupted := time.Since(start)
	intr := parseFleetReport(t, stdout)
	if exitCode(err) != 1 || !intr.Interrupted {
		t.Fatalf("interrupted rebase: exit %v, report %+v\n%s", err, intr, stderr)
	}
	movedEarly := map[string]state{}
	for _, key := range keys {
		if st := read(key); key != canary && st.class == to {
			movedEarly[key] = st
		}
	}
	if len(movedEarly) == 0 || len(movedEarly) == len(keys)-1 {
		t.Fatalf("the interrupted run moved %d of the second wave's %d clusters, want some but not all (--max-parallel 2)", len(movedEarly), len(keys)-1)
	}

	// Run again to the end.
	start = time.Now()
	res2 := e.applyOK(nil, "the resumed rebase over three management clusters", args...)
	resumed := time.Since(start)
	end := readAll()
	machinesReplaced := 0
	for _, key := range keys {
		r, ok := res2[key]
		if !ok {
			t.Errorf("%s is missing from the resumed run's report", key)
			continue
		}
		b, a := before[key], end[key]
		gone := replaced(b.machines, a.machines)
		machinesReplaced += len(gone)
		if a.class != to || !added(b.sets, a.sets) || len(gone) != 2 {
			t.Errorf("%s on %s after the rebase: class %s, MachineSets %v -> %v, Machines %v -> %v; want the new class, the control plane and worker Machines replaced",
				key, where[key], a.class, b.sets, a.sets, b.machines, a.machines)
		}
		early, wasEarly := movedEarly[key]
		switch {
		case key == canary:
			// (The controller deletes the canary's old, empty MachineSet meanwhile: only a new
			// one would be a second rollout.)
			if r.Result != fleetupgrade.ResultUpToDate || added(afterCanary[key].sets, a.sets) || a.generation != afterCanary[key].generation {
				t.Errorf("the canary in the resumed run: %s, MachineSets %v -> %v, generation %d -> %d: rolled again", r.Result, afterCanary[key].sets, a.sets, afterCanary[key].generation, a.generation)
			}
		case wasEarly:
			if a.generation != early.generation {
				t.Errorf("the resume moved %s again: generation %d -> %d", key, early.generation, a.generation)
			}
			for _, st := range r.Steps {
				if len(st.Patched) > 0 {
					t.Errorf("the resume patched %s, moved by the interrupted run: %+v", key, st)
				}
			}
		default:
			if r.Result != fleetupgrade.ResultRebased || len(r.Steps) != 1 || r.Steps[0].PredictionHeld == nil || !*r.Steps[0].PredictionHeld {
				t.Errorf("%s in the resumed run: %+v, want rebased as predicted", key, r)
			}
		}
	}
	for _, c := range e.clusters {
		var recs []fleetupgrade.RolloutRecord
		if err := json.Unmarshal([]byte(e.mustCapctl(c, "upgrade", "history", "-o", "json")), &recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) < 3 || recs[0].ClassRebase != rep.ClassRebase || recs[1].ClassRebase != rep.ClassRebase || recs[2].ClassRebase != rep.ClassRebase ||
			recs[0].State != fleetupgrade.RolloutSucceeded || recs[1].State != fleetupgrade.RolloutInterrupted || recs[2].State != fleetupgrade.RolloutStopped {
			t.Errorf("history on %s: %+v", c.Name, recs)
		}
	}
	var waveTimes []string
	for _, r := range []fleetupgrade.FleetApplyReport{rep, *intr} {
		for _, w := range r.Waves {
			if w.Seconds > 0 {
				waveTimes = append(waveTimes, fmt.Sprintf("%s %.0fs", w.Wave, w.Seconds))
			}
		}
	}
	t.Logf("rebase of %d clusters over %d management clusters onto %s: the canary (%s) and its 30s soak and failing gate %s; "+
		"the second run interrupted after %s (%d moved); the resumed run %s; waves %v; %d Machines replaced",
		len(keys), len(e.clusters), to, canary, first.Round(time.Second), interrupted.Round(time.Second), len(movedEarly),
		resumed.Round(time.Second), waveTimes, machinesReplaced)
}

// replaced are the Machines of before that are gone from after.
func replaced(before, after []string) []string {
	var out []string
	for _, m := range before {
		if !slices.Contains(after, m) {
			out = append(out, m)
		}
	}
	return out
}

// waitMachinesAvailable waits until ns holds n Machines on c, none being deleted and every one
// Available.
func waitMachinesAvailable(t *testing.T, c *livemgmt.Cluster, ns string, n int, timeout time.Duration) {
	var last string
	for start := time.Now(); time.Since(start) < timeout; time.Sleep(2 * time.Second) {
		ms, err := listMachines(context.Background(), c, ns)
		if err != nil {
			last = err.Error()
			continue
		}
		var waiting []string
		for i := range ms {
			if st, _ := condition(&ms[i], "Available"); st != "True" || ms[i].GetDeletionTimestamp() != nil {
				waiting = append(waiting, ms[i].GetName()+" (Available="+st+")")
			}
		}
		if len(ms) == n && len(waiting) == 0 {
			return
		}
		last = fmt.Sprintf("%d Machines, want %d; waiting for %v", len(ms), n, waiting)
	}
	t.Errorf("Machines of %s on %s: %s after %s", ns, c.Name, last, timeout)
}
