package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/topology"
)

// rebaseLive rolls a ClusterClass change out as a rebase (`topology apply --plan`) on the live
// clusters of TestTopologyPlanLive, with the real topology controller doing the work: a worker
// template change is planned and saved; a cluster changed after the plan refuses the apply,
// naming it, with nothing created; a new plan applied with --canary 1, a soak and a failing gate moves
// only the canary, whose worker Machines the controllers replace as predicted; once the gate
// passes the same command, interrupted (SIGINT) in the second wave and run again, moves the
// others, none twice and not the canary again; the old class is untouched,
// and the history holds both runs with the predictions that held. --rollback then moves the
// canary back (its workers rolled back by the controllers) before the failing gate stops it.
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
	var docs []string
	for _, o := range []*unstructured.Unstructured{worker, class} {
		b, err := sigsyaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(change, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
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
	canaryMachines := tp.machines("t-1")

	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The gate passes now: the same command, interrupted (SIGINT) once the second wave has moved
	// a cluster, then run again to the end.
	start = time.Now()
	run := tp.e.startCapctl(c, args...)
	if !run.waitOutput(": moved to ClusterClass "+to, 5*time.Minute) {
		_, stderr, err := run.wait()
		t.Fatalf("the second wave moved no cluster (exit %v):\n%s", err, stderr)
	}
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run.wait()
	if exitCode(err) != 1 || !strings.Contains(stderr, "interrupted after the patch under way: run the same command again") {
		t.Fatalf("interrupted rebase: exit %v\n%s", err, stderr)
	}
	intr := parseFleetReport(t, stdout)
	movedBefore := map[string]int64{}
	for _, n := range []string{"t-2", "t-3"} {
		if classOf(n) == to {
			u, err := getCluster(ctx, c, tp.ns, n)
			if err != nil {
				t.Fatal(err)
			}
			movedBefore[n] = u.GetGeneration()
		}
	}
	if !intr.Interrupted || len(movedBefore) == 0 || intr.Waves[0].Clusters[0].Result != fleetupgrade.ResultUpToDate {
		t.Fatalf("interrupted rebase: report %+v, moved %v", intr, movedBefore)
	}
	rep2 := fleetReport(t, tp.e.mustCapctl(c, args...))
	second := time.Since(start)
	for _, w := range rep2.Waves {
		for _, cl := range w.Clusters {
			switch {
			case cl.Name == "t-1" && cl.Result != fleetupgrade.ResultUpToDate:
				t.Errorf("resumed rebase: the canary %s, want %s", cl.Result, fleetupgrade.ResultUpToDate)
			case cl.Name != "t-1" && cl.Result != fleetupgrade.ResultRebased && cl.Result != fleetupgrade.ResultUpToDate:
				t.Errorf("resumed rebase: %s %s", cl.Name, cl.Result)
			}
			for _, st := range cl.Steps {
				// A cluster moved by this run says whether the prediction held; one moved by the
				// interrupted run is only followed (which Machines that run replaced is unknown).
				if _, early := movedBefore[cl.Name]; early == (len(st.Patched) > 0) || (!early && (st.PredictionHeld == nil || !*st.PredictionHeld)) {
					t.Errorf("resumed rebase: %s step %+v (moved by the interrupted run: %v)", cl.Name, st, early)
				}
			}
		}
	}
	for n, g := range movedBefore {
		if u, err := getCluster(ctx, c, tp.ns, n); err != nil || u.GetGeneration() != g {
			t.Errorf("the resume moved %s again: generation %d after the interrupted run, now %d (%v)", n, g, u.GetGeneration(), err)
		}
	}
	for _, n := range tp.names {
		if got := classOf(n); got != to {
			t.Errorf("%s uses ClusterClass %s after the rebase, want %s", n, got, to)
		}
	}
	// (The controller deletes the canary's old, empty MachineSet meanwhile: only a new one would
	// be a second rollout.)
	if now := tp.machines("t-1"); added(canaryMachines.ms, now.ms) {
		t.Errorf("the resume rolled the canary again: %v -> %v", canaryMachines.ms, now.ms)
	}
	old := &unstructured.Unstructured{}
	old.SetGroupVersionKind(classGVK)
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: tp.ns, Name: "in-memory"}, old); err != nil || old.GetGeneration() != liveClass.GetGeneration() {
		t.Errorf("the old class: %v, generation %d (was %d)", err, old.GetGeneration(), liveClass.GetGeneration())
	}
	t.Logf("rebase of %d clusters onto %s: canary run %s (stopped at the gate), interrupted and resumed run %s (SIGINT after %v moved)", len(tp.names), to, first.Round(time.Second), second.Round(time.Second), movedBefore)

	var recs []fleetupgrade.RolloutRecord
	if err := json.Unmarshal([]byte(tp.e.mustCapctl(c, "upgrade", "history", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Name != rep2.Record || recs[1].Name != intr.Record || recs[2].Name != rep.Record || recs[0].ClassRebase != rep.ClassRebase ||
		recs[0].State != fleetupgrade.RolloutSucceeded || recs[1].State != fleetupgrade.RolloutInterrupted || recs[2].State != fleetupgrade.RolloutStopped {
		t.Fatalf("history %+v", recs)
	}
	if c := recs[2].Waves[0].Clusters[0]; c.PredictionHeld == nil || !*c.PredictionHeld || strings.Join(c.Predicted, ",") != "MachineDeployment md-0" {
		t.Errorf("the record of the canary %+v: want the prediction that held", c)
	}

	// --rollback with the failing gate again: the canary moves back onto the old class, the
	// controllers roll its workers back, and the gate stops the others where they are.
	if err := os.Remove(ok); err != nil {
		t.Fatal(err)
	}
	beforeBack := tp.machines("t-1")
	start = time.Now()
	out, err = tp.e.capctl(c, append(args, "--rollback")...)
	if err == nil {
		t.Fatalf("the failing gate did not stop the rollback:\n%s", out)
	}
	back := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	if cl := back.Waves[0].Clusters[0]; back.ClassRebase != tp.ns+"/"+to+" -> in-memory" || cl.Name != "t-1" || cl.Result != fleetupgrade.ResultRebased ||
		back.Stop == nil || strings.Join(back.Stop.Details, "") != "smoke test failed on topo/t-1 ("+to+" -> in-memory)" {
		t.Errorf("rollback %q: canary %+v, stop %+v", back.ClassRebase, cl, back.Stop)
	}
	if got := []string{classOf("t-1"), classOf("t-2"), classOf("t-3")}; got[0] != "in-memory" || got[1] != to || got[2] != to {
		t.Errorf("after the rollback's canary the clusters use %v", got)
	}
	if !added(beforeBack.ms, tp.machines("t-1").ms) {
		t.Errorf("the rollback did not roll the canary's workers back: MachineSets %v -> %v", beforeBack.ms, tp.machines("t-1").ms)
	}
	t.Logf("rollback of the canary: %s", time.Since(start).Round(time.Second))
}

// rebaseAcrossContextsLive: the fleet of TestFleetOverManagementClustersLive (four ClusterClass
// clusters, waves 1 and 2, over three management clusters, each with its own "in-memory"
// class) rebased onto a class whose patch changes the control plane's kubeadm configuration:
// one plan over every context, saved; the apply over every context creates the class on each
// management cluster, moves wave 1 (two management clusters) and stops at the failing gate with
// wave 2 untouched; the same command with the gate passing moves wave 2; every control plane was
// replaced by its own controllers, as predicted, and each management cluster keeps the record.
func rebaseAcrossContextsLive(e *e2e, ns string, where map[string]string) {
	t := e.t
	ctx := context.Background()
	byName := map[string]*livemgmt.Cluster{}
	for _, c := range e.clusters {
		byName[c.Name] = c
	}
	tp := &topoPlan{e: e, c: e.clusters[0], ns: ns, dir: t.TempDir()}
	class := tp.live(classGVK, "in-memory")
	patches, _, _ := unstructured.NestedSlice(class.Object, "spec", "patches")
	patches = append(patches, map[string]any{"name": "control-plane-san", "definitions": []any{map[string]any{
		"selector": map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate",
			"matchResources": map[string]any{"controlPlane": true}},
		"jsonPatches": []any{map[string]any{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/certSANs/-", "value": "regions.example"}},
	}}})
	_ = unstructured.SetNestedSlice(class.Object, patches, "spec", "patches")
	b, err := sigsyaml.Marshal(class.Object)
	if err != nil {
		t.Fatal(err)
	}
	change := filepath.Join(tp.dir, "class.yaml")
	if err := os.WriteFile(change, b, 0o600); err != nil {
		t.Fatal(err)
	}
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
		if !cp.ControlPlane.RollsOut || cp.ManagementCluster != where[cp.Namespace+"/"+cp.Name] {
			t.Fatalf("plan of %s on %s: control plane rolls %v; want it to", cp.Name, cp.ManagementCluster, cp.ControlPlane.RollsOut)
		}
	}
	cpMachines := func() map[string][]string {
		out := map[string][]string{}
		for key, mc := range where {
			name := strings.TrimPrefix(key, ns+"/")
			tp.c = byName[mc]
			out[key] = tp.machines(name).cp
		}
		return out
	}
	before := cpMachines()
	ok := filepath.Join(tp.dir, "ok")
	gate := `test -f ` + ok + ` || { echo "smoke test failed on $CAPCTL_CLUSTERS"; exit 1; }`
	args := []string{"topology", "apply", "--plan", path, "--all-contexts", "--gate-command", gate, "--max-parallel", "100%", "--timeout", "8m", "-o", "json"}
	start := time.Now()
	out, err = e.capctl(nil, args...)
	first := time.Since(start)
	if err == nil {
		t.Fatalf("the failing gate did not stop the rebase:\n%s", out)
	}
	rep := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	if rep.Stop == nil || rep.Stop.At != "after wave 1" || len(rep.Waves) != 2 {
		t.Fatalf("rebase across contexts stopped %+v, waves %d", rep.Stop, len(rep.Waves))
	}
	to := strings.TrimPrefix(rep.ClassRebase, ns+"/in-memory -> ")
	mid := cpMachines()
	for key, r := range fleetResults(&rep) {
		wave1 := r.Name == "r1-a" || r.Name == "r2-a"
		held := len(r.Steps) == 1 && r.Steps[0].PredictionHeld != nil && *r.Steps[0].PredictionHeld
		if (wave1 && (r.Result != fleetupgrade.ResultRebased || !held || !added(before[key], mid[key]))) ||
			(!wave1 && (r.Result != fleetupgrade.ResultNotStarted || added(before[key], mid[key]))) {
			t.Errorf("%s on %s after wave 1: %+v; control plane Machines %v -> %v", key, r.ManagementCluster, r, before[key], mid[key])
		}
	}
	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	res2 := e.applyOK(nil, "the resumed rebase over three management clusters", args...)
	second := time.Since(start)
	end := cpMachines()
	for key, r := range res2 {
		wave1 := r.Name == "r1-a" || r.Name == "r2-a"
		if wave1 && (r.Result != fleetupgrade.ResultUpToDate || added(mid[key], end[key])) {
			t.Errorf("%s: %s in the resumed run, control plane Machines %v -> %v: wave 1 moved again", key, r.Result, mid[key], end[key])
		}
		if !wave1 && (r.Result != fleetupgrade.ResultRebased || !added(mid[key], end[key]) || r.Steps[0].PredictionHeld == nil || !*r.Steps[0].PredictionHeld) {
			t.Errorf("%s: %+v in the resumed run, control plane Machines %v -> %v", key, r, mid[key], end[key])
		}
		u, err := getCluster(ctx, byName[where[key]], ns, r.Name)
		if err != nil {
			t.Fatal(err)
		}
		if n, _, _ := unstructured.NestedString(u.Object, "spec", "topology", "classRef", "name"); n != to {
			t.Errorf("%s on %s uses ClusterClass %s, want %s", key, where[key], n, to)
		}
	}
	for _, c := range e.clusters {
		var recs []fleetupgrade.RolloutRecord
		if err := json.Unmarshal([]byte(e.mustCapctl(c, "upgrade", "history", "-o", "json")), &recs); err != nil {
			t.Fatal(err)
		}
		if len(recs) < 2 || recs[0].ClassRebase != rep.ClassRebase || recs[0].State != fleetupgrade.RolloutSucceeded || recs[1].State != fleetupgrade.RolloutStopped {
			t.Errorf("history on %s: %+v", c.Name, recs)
		}
	}
	t.Logf("rebase of %d clusters over %d management clusters onto %s: wave 1 and the failing gate %s, wave 2 %s", len(where), len(e.clusters), to, first.Round(time.Second), second.Round(time.Second))
}
