package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/fleetupgrade"
)

// TestGatedFleetRolloutLive: four in-memory ClusterClass clusters without wave labels. A plan is
// saved; one cluster is then edited (paused): `apply --plan` refuses naming that cluster and its
// spec change, and changes nothing (resourceVersions compared). A new plan with --canary 1
// --soak 30s and a --gate-command that fails: the first run loses the canary's infrastructure
// controller (CAPD scaled to 0) during the soak, which stops it naming the cluster and the new
// finding; the second, CAPD back, stops in the soak when the canary's worker Machine is remediated
// by its MachineHealthCheck; the third stops at the failing gate with only the canary upgraded;
// once the gate passes, the same `apply --plan` finishes the other three, and `upgrade history`
// shows the four runs as they went. Then the same engine rotates the four clusters' machines
// (rotateFleet).
func TestGatedFleetRolloutLive(t *testing.T) {
	const (
		fleetNS = "gated"
		target  = "v1.35.0"
	)
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	names := []string{"g-1", "g-2", "g-3", "g-4"}
	for _, name := range names {
		e.createCluster(mgmt, fleetNS, name, k8sVersion, 1)
	}
	for _, name := range names {
		e.waitAvailable(mgmt, fleetNS, name, 10*time.Minute) // four at once, on a loaded 2-core machine
	}
	dir := t.TempDir()
	gate := `test -f ` + filepath.Join(dir, "ok") + ` || { echo "canary smoke test failed on $CAPCTL_CLUSTERS"; exit 1; }`
	planArgs := func(path string) []string {
		return []string{"upgrade", "plan", "--kubernetes-version", target, "-n", fleetNS, "--canary", "1", "--max-parallel", "100%",
			"--soak", "30s", "--gate-command", gate, "--save", path}
	}

	// A plan, then an edit: refused, nothing changed.
	stale := filepath.Join(dir, "stale.json")
	e.mustCapctl(mgmt, planArgs(stale)...)
	setPaused(t, mgmt.Client, fleetNS, "g-4", true)
	// The Cluster controller reports the pause in the status (a resourceVersion of its own):
	// compare from the state it settles in.
	settled(t, mgmt, fleetNS, "g-4")
	before := objectVersions(t, mgmt.Client, fleetNS)
	out, err := e.capctl(mgmt, "upgrade", "apply", "--plan", stale)
	if err == nil || !strings.Contains(out, "cluster gated/g-4: spec changed since the plan (metadata.generation") || !strings.Contains(out, "nothing more was changed") {
		t.Fatalf("apply --plan of a stale plan: %v\n%s", err, out)
	}
	if after := objectVersions(t, mgmt.Client, fleetNS); !maps.Equal(before, after) {
		t.Errorf("a refused apply changed objects:\n%v\n%v", before, after)
	}
	setPaused(t, mgmt.Client, fleetNS, "g-4", false)

	// The reviewed plan: the gate fails after the canary.
	path := filepath.Join(dir, "plan.json")
	planOut := e.mustCapctl(mgmt, planArgs(path)...)
	if !strings.Contains(planOut, "canary") || !strings.Contains(planOut, "Plan saved to "+path) {
		t.Fatalf("plan:\n%s", planOut)
	}
	// First run: during the canary's soak its infrastructure provider's controller goes away
	// (CAPD scaled to 0): a new diagnose finding, so the soak stops the rollout and names it.
	start := time.Now()
	run := e.startCapctl(mgmt, "upgrade", "apply", "--plan", path, "--timeout", "8m", "-o", "json")
	if !run.waitOutput("Wave canary: soaking 30s", 8*time.Minute) {
		run.wait()
		t.Fatal("the canary wave never reached its soak")
	}
	// The soak's baseline is what diagnose finds at its first look: the controller goes a few
	// looks later (a look every 3 s), its pod at once (no grace period), within the 30 s.
	time.Sleep(8 * time.Second)
	scaleCAPD(t, mgmt, 0)
	if err := mgmt.Client.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("capd-system"), client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	soakOut, _, err := run.wait()
	t.Logf("first run (stopped in the soak): %s", time.Since(start).Round(time.Second))
	if err == nil {
		t.Fatalf("the soak did not stop the rollout when the canary's infrastructure controller went away:\n%s", soakOut)
	}
	soakRep := fleetReport(t, soakOut)
	if soakRep.Stop == nil || soakRep.Stop.Gate != fleetupgrade.GateSoak || soakRep.Stop.At != "after wave canary" ||
		!strings.Contains(soakRep.Stop.Reason, "gated/g-1") || !strings.Contains(soakRep.Stop.Reason+strings.Join(soakRep.Stop.Details, " "), diagnose.RuleProviderController) {
		t.Fatalf("soak stop %+v: want the canary gated/g-1 named with the new %s finding", soakRep.Stop, diagnose.RuleProviderController)
	}
	t.Logf("soak stop: %s; evidence: %s", soakRep.Stop.Reason, strings.Join(soakRep.Stop.Details, "; "))
	scaleCAPD(t, mgmt, 1)
	waitFor(t, 3*time.Minute, "CAPD to run again", func() bool { return capdReady(context.Background(), mgmt) })
	for _, name := range names {
		e.waitAvailable(mgmt, fleetNS, name, 5*time.Minute)
	}

	// Second run, CAPD back: during the soak the canary's worker Machine is given to its
	// MachineHealthCheck for remediation (the remediate-machine annotation, which every
	// MachineHealthCheck honours): the MachineHealthCheck marks it, its MachineSet replaces it,
	// and the soak stops the rollout naming the canary.
	start = time.Now()
	run = e.startCapctl(mgmt, "upgrade", "apply", "--plan", path, "--timeout", "8m", "-o", "json")
	if !run.waitOutput("Wave canary: soaking 30s", 8*time.Minute) {
		run.wait()
		t.Fatal("the second run never reached the canary's soak")
	}
	time.Sleep(5 * time.Second) // past the soak's first look
	worker := markForRemediation(t, mgmt.Client, fleetNS, "g-1")
	mhcOut, _, err := run.wait()
	t.Logf("second run (stopped in the soak by a remediation): %s", time.Since(start).Round(time.Second))
	if err == nil {
		t.Fatalf("the soak did not stop the rollout when the canary's Machine %s was remediated:\n%s", worker, mhcOut)
	}
	mhcRep := fleetReport(t, mhcOut)
	// The soak looks every 3 s: it sees the Machine marked (HealthCheckSucceeded, OwnerRemediated)
	// or, when the MachineSet was quicker, the cluster no longer Available without its worker.
	if mhcRep.Stop == nil || mhcRep.Stop.Gate != fleetupgrade.GateSoak || !strings.Contains(mhcRep.Stop.Reason, "cluster gated/g-1 ") ||
		!(strings.Contains(mhcRep.Stop.Reason, "Machine "+worker+" ") || strings.Contains(mhcRep.Stop.Reason, "stopped being Available")) {
		t.Fatalf("soak stop %+v: want the canary gated/g-1 named with its remediated Machine %s (or its lost availability)", mhcRep.Stop, worker)
	}
	t.Logf("soak stop: %s; evidence: %s", mhcRep.Stop.Reason, strings.Join(mhcRep.Stop.Details, "; "))
	waitFor(t, 5*time.Minute, "the remediated Machine "+worker+" to be replaced", func() bool {
		m := &unstructured.Unstructured{}
		m.SetGroupVersionKind(machineGVK)
		return apierrors.IsNotFound(mgmt.Client.Get(context.Background(), client.ObjectKey{Namespace: fleetNS, Name: worker}, m))
	})
	e.waitAvailable(mgmt, fleetNS, "g-1", 5*time.Minute)

	// Third run: the soak passes, and the gate fails.
	start = time.Now()
	out, err = e.capctl(mgmt, "upgrade", "apply", "--plan", path, "--timeout", "8m", "-o", "json")
	t.Logf("third run: %s", time.Since(start).Round(time.Second))
	if err == nil {
		t.Fatalf("the failing gate did not stop the rollout:\n%s", out)
	}
	// The report comes first, then the error that says why the run stopped.
	rep := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	if rep.Stop == nil || rep.Stop.Gate != fleetupgrade.GateCommand || rep.Stop.At != "after wave canary" || strings.Join(rep.Stop.Details, "") != "canary smoke test failed on gated/g-1" {
		t.Fatalf("stop %+v", rep.Stop)
	}
	if g := rep.Waves[0].Gates; len(g) != 2 || !g[0].Passed || g[0].Seconds < 30 || g[1].Passed {
		t.Errorf("canary gates %+v: want a passed 30s soak and a failed gate command", g)
	}
	versions := clusterMachineVersions(t, mgmt.Client, fleetNS)
	if versions["g-1"] != target || versions["g-2"] != k8sVersion || versions["g-3"] != k8sVersion || versions["g-4"] != k8sVersion {
		t.Errorf("after the stopped run, Machines run %v: want only the canary g-1 at %s", versions, target)
	}

	// The gate passes now: the same plan finishes.
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	out = e.mustCapctl(mgmt, "upgrade", "apply", "--plan", path, "--timeout", "8m", "-o", "json")
	t.Logf("fourth run: %s", time.Since(start).Round(time.Second))
	rep2 := fleetReport(t, out)
	for _, w := range rep2.Waves {
		for _, c := range w.Clusters {
			want := fleetupgrade.ResultUpgraded
			if c.Name == "g-1" {
				want = fleetupgrade.ResultUpToDate
			}
			if c.Result != want {
				t.Errorf("fourth run: %s %s, want %s", c.Name, c.Result, want)
			}
		}
	}
	for name, v := range clusterMachineVersions(t, mgmt.Client, fleetNS) {
		if v != target {
			t.Errorf("%s's Machines at %s after the fourth run", name, v)
		}
	}

	// The history tells both runs.
	var recs []fleetupgrade.RolloutRecord
	if err := json.Unmarshal([]byte(e.mustCapctl(mgmt, "upgrade", "history", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Name != rep2.Record || recs[1].Name != rep.Record || recs[2].Name != mhcRep.Record || recs[3].Name != soakRep.Record {
		t.Fatalf("history %+v, want the fourth, third, second and first runs", recs)
	}
	if recs[3].State != fleetupgrade.RolloutStopped || recs[3].Stop == nil || recs[3].Stop.Gate != fleetupgrade.GateSoak ||
		recs[3].Waves[0].Clusters[0].Result != fleetupgrade.ResultUpgraded || recs[3].Waves[1].Clusters[0].Result != fleetupgrade.ResultNotStarted {
		t.Errorf("first run's record %+v: want stopped by the soak", recs[3])
	}
	if recs[2].State != fleetupgrade.RolloutStopped || recs[2].Stop == nil || recs[2].Stop.Gate != fleetupgrade.GateSoak || recs[2].Stop.Reason != mhcRep.Stop.Reason ||
		recs[2].Waves[0].Clusters[0].Result != fleetupgrade.ResultUpToDate || recs[2].Waves[1].Clusters[0].Result != fleetupgrade.ResultNotStarted {
		t.Errorf("second run's record %+v: want stopped by the soak at the remediation", recs[2])
	}
	if recs[1].State != fleetupgrade.RolloutStopped || recs[1].Stop == nil || recs[1].Stop.Gate != fleetupgrade.GateCommand || recs[1].PlanDigest == "" ||
		recs[1].Waves[0].Clusters[0].Result != fleetupgrade.ResultUpToDate || recs[1].Waves[1].Clusters[0].Result != fleetupgrade.ResultNotStarted {
		t.Errorf("third run's record %+v", recs[1])
	}
	if recs[0].State != fleetupgrade.RolloutSucceeded || recs[0].PlanDigest != recs[1].PlanDigest || recs[0].User == "" {
		t.Errorf("fourth run's record %+v", recs[0])
	}
	e.mustCapctl(mgmt, "upgrade", "history", rep.Record)

	rotateFleet(t, e, mgmt, fleetNS, dir)
}

// rotateFleet: the machine rotation of the same four ClusterClass clusters through the same
// engine. `alpha rollout restart --all-clusters --canary 1` with a failing gate stops after the
// canary, whose control plane and worker Machines the real controllers replaced (asked through
// the Cluster's topology); the resume with the printed --rollout-after replaces the other three
// clusters' Machines and leaves the canary's alone; the history holds both runs after the
// upgrade's.
func rotateFleet(t *testing.T, e *e2e, mgmt *livemgmt.Cluster, ns, dir string) {
	t.Helper()
	ok := filepath.Join(dir, "rotation-ok")
	gate := `test -f ` + ok + ` || { echo "rotation smoke test failed on $CAPCTL_CLUSTERS at $CAPCTL_ROLLOUT_AFTER"; exit 1; }`
	args := []string{"alpha", "rollout", "restart", "--all-clusters", "-n", ns, "--canary", "1", "--max-parallel", "100%", "--gate-command", gate, "--timeout", "8m", "-o", "json"}
	time.Sleep(time.Second) // rollout.after holds seconds: every Machine is older than the rotation
	before := machinesByCluster(t, mgmt.Client, ns)

	start := time.Now()
	out, err := e.capctl(mgmt, args...)
	first := time.Since(start)
	if err == nil {
		t.Fatalf("the failing gate did not stop the rotation:\n%s", out)
	}
	rep := fleetReport(t, out[:strings.LastIndex(out, "\nError: ")+1])
	at := rep.RolloutAfter
	if at == "" || rep.Stop == nil || rep.Stop.Gate != fleetupgrade.GateCommand || strings.Join(rep.Stop.Details, "") != "rotation smoke test failed on "+ns+"/g-1 at "+at {
		t.Fatalf("rotation stop %+v (rollout.after %q)", rep.Stop, at)
	}
	if !strings.Contains(out, "run the same command again with --rollout-after "+at) {
		t.Errorf("the stopped rotation does not say how to resume:\n%s", out)
	}
	canary := rep.Waves[0].Clusters[0]
	if canary.Name != "g-1" || canary.Result != fleetupgrade.ResultRotated || len(canary.Steps) != 1 ||
		!strings.Contains(strings.Join(canary.Steps[0].Patched, " "), "via Cluster "+ns+"/g-1 spec.topology.workers.machineDeployments[name=md-0].rollout.after") {
		t.Fatalf("canary %+v: want g-1 rotated through its Cluster's topology", canary)
	}
	mid := machinesByCluster(t, mgmt.Client, ns)
	for cl, ms := range mid {
		for name, created := range ms {
			_, old := before[cl][name]
			if cl == "g-1" && (old || created.Before(mustTime(t, at))) {
				t.Errorf("the canary's Machine %s (created %s) was not replaced", name, created)
			}
			if cl != "g-1" && !old {
				t.Errorf("%s's Machine %s is new: a cluster after the stopped canary was rotated", cl, name)
			}
		}
	}

	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	rep2 := fleetReport(t, e.mustCapctl(mgmt, append(args, "--rollout-after", at)...))
	second := time.Since(start)
	replaced := 0
	after := machinesByCluster(t, mgmt.Client, ns)
	for _, w := range rep2.Waves {
		for _, c := range w.Clusters {
			want := fleetupgrade.ResultRotated
			if c.Name == "g-1" {
				want = fleetupgrade.ResultUpToDate
			}
			if c.Result != want {
				t.Errorf("resumed rotation: %s %s, want %s", c.Name, c.Result, want)
			}
		}
	}
	for cl, ms := range after {
		for name, created := range ms {
			if created.Before(mustTime(t, at)) {
				t.Errorf("%s's Machine %s created %s, before the rotation's %s", cl, name, created, at)
			}
			if _, old := before[cl][name]; !old {
				replaced++
			}
		}
		if cl == "g-1" && !maps.EqualFunc(ms, mid[cl], func(a, b time.Time) bool { return a.Equal(b) }) {
			t.Errorf("the resume replaced the canary's Machines again: %v -> %v", mid[cl], ms)
		}
	}
	t.Logf("rotation of %d clusters: canary run %s (stopped at the gate), resume %s; %d Machines replaced", len(after), first.Round(time.Second), second.Round(time.Second), replaced)

	var recs []fleetupgrade.RolloutRecord
	if err := json.Unmarshal([]byte(e.mustCapctl(mgmt, "upgrade", "history", "-o", "json")), &recs); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 || recs[0].Name != rep2.Record || recs[1].Name != rep.Record || recs[0].RolloutAfter != at || recs[1].RolloutAfter != at ||
		recs[0].State != fleetupgrade.RolloutSucceeded || recs[1].State != fleetupgrade.RolloutStopped || recs[2].RolloutAfter != "" {
		t.Errorf("history after the rotation: %+v", recs)
	}
}

// machinesByCluster maps each cluster of ns to its Machines' names and creation times.
func machinesByCluster(t *testing.T, c client.Client, ns string) map[string]map[string]time.Time {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(machineGVK.GroupVersion().WithKind("MachineList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]time.Time{}
	for _, m := range list.Items {
		cl := m.GetLabels()[fleetupgrade.ClusterNameLabel]
		if out[cl] == nil {
			out[cl] = map[string]time.Time{}
		}
		out[cl][m.GetName()] = m.GetCreationTimestamp().Time
	}
	return out
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// markForRemediation gives the worker Machine of cluster ns/name to its MachineHealthCheck with
// Cluster API's remediate-machine annotation, and returns the Machine's name.
func markForRemediation(t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(machineGVK.GroupVersion().WithKind("MachineList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{fleetupgrade.ClusterNameLabel: name}, client.HasLabels{"cluster.x-k8s.io/deployment-name"}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		t.Fatalf("cluster %s/%s has no worker Machine", ns, name)
	}
	m := &list.Items[0]
	patch := `{"metadata":{"annotations":{"cluster.x-k8s.io/remediate-machine":""}}}`
	if err := c.Patch(context.Background(), m, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	return m.GetName()
}

func setPaused(t *testing.T, c client.Client, ns, name string, paused bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	patch := `{"spec":{"paused":false}}`
	if paused {
		patch = `{"spec":{"paused":true}}`
	}
	if err := c.Patch(context.Background(), u, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// settled waits until the Cluster reports Paused=True and its resourceVersion stays the same
// for three seconds.
func settled(t *testing.T, c *livemgmt.Cluster, ns, name string) {
	t.Helper()
	last, since := "", time.Now()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		u, err := getCluster(context.Background(), c, ns, name)
		if err != nil {
			continue
		}
		if st, _ := condition(u, "Paused"); st != "True" || u.GetResourceVersion() != last {
			last, since = u.GetResourceVersion(), time.Now()
			continue
		}
		if time.Since(since) >= 3*time.Second {
			return
		}
	}
	t.Fatalf("cluster %s/%s did not settle paused", ns, name)
}

// objectVersions maps the Clusters, control planes and MachineDeployments of ns to their
// resourceVersions.
func objectVersions(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range fleetObjects(t, c, ns) {
		out[o.GetKind()+"/"+o.GetName()] = o.GetResourceVersion()
	}
	return out
}

// clusterMachineVersions maps each cluster of ns to its Machines' versions ("v1.35.0" when all
// agree, else the sorted list).
func clusterMachineVersions(t *testing.T, c client.Client, ns string) map[string]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(machineGVK.GroupVersion().WithKind("MachineList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	for _, m := range list.Items {
		cl := m.GetLabels()[fleetupgrade.ClusterNameLabel]
		v, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		if seen[cl] == nil {
			seen[cl] = map[string]bool{}
		}
		seen[cl][v] = true
	}
	out := map[string]string{}
	for cl, vs := range seen {
		var l []string
		for v := range vs {
			l = append(l, v)
		}
		sort.Strings(l)
		out[cl] = strings.Join(l, ",")
	}
	return out
}
