package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/multicluster"
)

// useContexts gives each management cluster a kubeconfig context of its own name and makes
// their KUBECONFIG list the one capctl reads when it runs with no management cluster of its own
// (e.capctl(nil, ...)), as a user with one kubeconfig per region does.
func (e *e2e) useContexts() {
	var files []string
	for _, c := range e.clusters {
		files = append(files, testenv.KubeconfigFileAs(e.t, c.Kubeconfig, c.Name))
	}
	e.kubeconfigs = strings.Join(files, string(os.PathListSeparator))
}

// TestFleetOverManagementClustersLive: three live management clusters, each with its own
// controllers, hold four clusters in two upgrade waves that each span two of them. Over all
// three contexts at once, capctl:
//   - shows every cluster in one table (describe clusters, diagnose clusters: healthy, exit 0);
//   - plans the fleet's Kubernetes upgrade as one set of waves, and applies it: a run stopped by
//     SIGINT right after its first patch leaves the second wave untouched, and the same command
//     again finishes every cluster without patching anything twice;
//   - rebases the four onto a changed ClusterClass with `topology apply` over the three
//     (rebaseAcrossContextsLive): a canary and a 30 s soak stopped by a failing gate, the gate
//     fixed and the run interrupted by SIGINT in the second wave, the same command finishing;
//   - with mgmt-3's infrastructure manager (CAPD) stopped, diagnose names mgmt-3 and that
//     provider, and exits 2;
//   - with mgmt-2's API server stopped, exits 3 with mgmt-2 unreachable and the other two
//     complete.
func TestFleetOverManagementClustersLive(t *testing.T) {
	const (
		ns     = "regions"
		target = "v1.35.0"
	)
	e := start(t, 3)
	if !e.host.Isolated() {
		t.Skipf("the management clusters share one CAPD here (%s): three cannot reconcile on their own", e.host.Shared())
	}
	m1, m2, m3 := e.clusters[0], e.clusters[1], e.clusters[2]
	parallel(func() { e.initAt(m1, "v1.14.0") }, func() { e.initAt(m2, "v1.14.0") }, func() { e.initAt(m3, "v1.14.0") })
	if t.Failed() {
		t.FailNow()
	}
	e.useContexts()
	fleet := []struct {
		c          *livemgmt.Cluster
		name, wave string
	}{
		{m1, "r1-a", "1"},
		{m2, "r2-a", "1"},
		{m2, "r2-b", "2"},
		{m3, "r3-a", "2"},
	}
	for _, f := range fleet {
		e.createCluster(f.c, ns, f.name, k8sVersion, 0)
	}
	var waits []func()
	for _, f := range fleet {
		waits = append(waits, func() { e.waitAvailableE(f.c, ns, f.name, 5*time.Minute) })
	}
	parallel(waits...)
	if t.Failed() {
		t.FailNow()
	}
	for _, f := range fleet {
		setWave(t, f.c, ns, f.name, f.wave)
	}
	want := map[string]string{} // ns/name -> management cluster
	for _, f := range fleet {
		want[ns+"/"+f.name] = f.c.Name
	}

	// The providers of the three, as one table: the same four everywhere, so no drift.
	out, err := e.capctl(nil, "get", "providers", "--all-contexts", "-o", "json")
	var pv diagnose.ProvidersView
	if exitCode(err) != 0 || json.Unmarshal([]byte(out), &pv) != nil {
		t.Fatalf("get providers --all-contexts: exit %d\n%s", exitCode(err), out)
	}
	if len(pv.Providers) != 12 || len(pv.Drift) != 0 {
		t.Errorf("get providers --all-contexts: %d providers (want 3×4) and drift %+v (want none)", len(pv.Providers), pv.Drift)
	}
	checkSummaries(t, "get providers", pv.ManagementClusters, map[string]int{m1.Name: 0, m2.Name: 0, m3.Name: 0}, "")
	if text := e.mustCapctl(nil, "get", "providers", "--all-contexts"); !strings.HasPrefix(text, "MANAGEMENT") {
		t.Errorf("get providers --all-contexts: the table does not start with the MANAGEMENT column:\n%s", text)
	}

	// One view of the three.
	out, err = e.capctl(nil, "describe", "clusters", "--all-contexts", "-n", ns, "-o", "json")
	var sv describe.SummaryView
	if exitCode(err) != 0 || json.Unmarshal([]byte(out), &sv) != nil {
		t.Fatalf("describe clusters --all-contexts: exit %d\n%s", exitCode(err), out)
	}
	checkRows(t, "describe clusters", want, len(sv.Clusters), func(i int) (string, string) {
		return sv.Clusters[i].ManagementCluster, sv.Clusters[i].Namespace + "/" + sv.Clusters[i].Name
	})
	checkSummaries(t, "describe clusters", sv.ManagementClusters, map[string]int{m1.Name: 1, m2.Name: 2, m3.Name: 1}, "")
	text := e.mustCapctl(nil, "describe", "clusters", "--all-contexts", "-n", ns)
	if !strings.HasPrefix(text, "MANAGEMENT") {
		t.Errorf("the table does not start with the MANAGEMENT column:\n%s", text)
	}
	out, err = e.capctl(nil, "diagnose", "clusters", "--all-contexts", "-n", ns, "-o", "json")
	var dv diagnose.FleetView
	if exitCode(err) != 0 || json.Unmarshal([]byte(out), &dv) != nil || !dv.Healthy {
		t.Fatalf("diagnose clusters --all-contexts of a healthy fleet: exit %d (want 0)\n%s", exitCode(err), out)
	}
	checkRows(t, "diagnose clusters", want, len(dv.Clusters), func(i int) (string, string) {
		return dv.Clusters[i].ManagementCluster, dv.Clusters[i].Namespace + "/" + dv.Clusters[i].Name
	})

	// The fleet's Kubernetes, wave by wave across the three.
	plan := e.mustCapctl(nil, "upgrade", "plan", "--kubernetes-version", target, "--all-contexts", "-n", ns)
	if !strings.Contains(plan, "4 cluster(s) in 2 wave(s), 0 cannot be planned") {
		t.Fatalf("plan:\n%s", plan)
	}
	testFleetAcrossContextsLive(e, ns, target, want)
	rebaseAcrossContextsLive(e, ns, want)

	// mgmt-3's infrastructure manager stopped: diagnose names it and exits 2.
	scaleCAPD(t, m3, 0)
	ctx := context.Background()
	waitFor(t, 2*time.Minute, "mgmt-3's CAPD pod to go", func() bool {
		pods := &corev1.PodList{}
		return m3.Client.List(ctx, pods, client.InNamespace("capd-system")) == nil && len(pods.Items) == 0
	})
	out, err = e.capctl(nil, "diagnose", "clusters", "--all-contexts", "-n", ns, "-o", "json")
	dv = diagnose.FleetView{}
	if exitCode(err) != 2 || json.Unmarshal([]byte(out), &dv) != nil {
		t.Fatalf("diagnose clusters with mgmt-3's CAPD stopped: exit %d (want 2)\n%s", exitCode(err), out)
	}
	for _, r := range dv.Clusters {
		stopped := r.Root != nil && r.Root.Rule == diagnose.RuleProviderController && r.Root.Responsible != nil &&
			r.Root.Responsible.Provider == "infrastructure-docker"
		switch {
		case r.ManagementCluster == m3.Name && !stopped:
			t.Errorf("%s on %s: root %+v, want %s naming infrastructure-docker", r.Name, r.ManagementCluster, r.Root, diagnose.RuleProviderController)
		case r.ManagementCluster != m3.Name && !r.Healthy:
			t.Errorf("%s on %s is not healthy with only mgmt-3's CAPD stopped: %+v", r.Name, r.ManagementCluster, r.Root)
		}
	}
	checkSummaries(t, "diagnose clusters, CAPD stopped", dv.ManagementClusters, map[string]int{m1.Name: 1, m2.Name: 2, m3.Name: 1}, "")

	// mgmt-2's API server stopped: exit 3, mgmt-2 unreachable, the others complete.
	if err := m2.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	out, err = e.capctl(nil, "describe", "clusters", "--all-contexts", "-n", ns, "-o", "json")
	sv = describe.SummaryView{}
	if exitCode(err) != 3 || json.Unmarshal([]byte(out), &sv) != nil {
		t.Fatalf("describe clusters with mgmt-2's API server stopped: exit %d (want 3)\n%s", exitCode(err), out)
	}
	delete(want, ns+"/r2-a")
	delete(want, ns+"/r2-b")
	checkRows(t, "describe clusters, mgmt-2 down", want, len(sv.Clusters), func(i int) (string, string) {
		return sv.Clusters[i].ManagementCluster, sv.Clusters[i].Namespace + "/" + sv.Clusters[i].Name
	})
	checkSummaries(t, "describe clusters, mgmt-2 down", sv.ManagementClusters, map[string]int{m1.Name: 1, m3.Name: 1}, m2.Name)
	if _, err := e.capctl(nil, "diagnose", "clusters", "--all-contexts", "-n", ns); exitCode(err) != 3 {
		t.Errorf("diagnose clusters with mgmt-2's API server stopped: exit %d, want 3", exitCode(err))
	}
}

// testFleetAcrossContextsLive interrupts the apply over every context right after its first
// patch (r1-a, wave 1 on mgmt-1), then runs it again to the end.
func testFleetAcrossContextsLive(e *e2e, ns, target string, where map[string]string) {
	t := e.t
	byName := map[string]*livemgmt.Cluster{}
	for _, c := range e.clusters {
		byName[c.Name] = c
	}
	secondWave := map[string][]string{}
	for key, mc := range where {
		name := strings.TrimPrefix(key, ns+"/")
		if name == "r2-b" || name == "r3-a" {
			secondWave[key] = specState(t, byName[mc], ns, name)
		}
	}
	args := []string{"upgrade", "apply", "--kubernetes-version", target, "--all-contexts", "-n", ns, "--timeout", "8m", "-o", "json"}
	run := e.startCapctl(nil, args...)
	firstPatch := "set Cluster r1-a spec.topology.version to " + target
	if !run.waitOutput(firstPatch, 3*time.Minute) {
		_, stderr, err := run.wait()
		t.Fatalf("no %q in the progress (exit %v):\n%s", firstPatch, err, stderr)
	}
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run.wait()
	if code := exitCode(err); code != 1 {
		t.Errorf("interrupted run: exit %d, want 1\n%s", code, stderr)
	}
	rep := parseFleetReport(t, stdout)
	if !rep.Interrupted {
		t.Errorf("interrupted report: %+v", rep)
	}
	patchedBefore := map[string]bool{}
	for key, r := range fleetResults(rep) {
		if r.ManagementCluster != where[key] {
			t.Errorf("%s: report row names management cluster %q, want %q", key, r.ManagementCluster, where[key])
		}
		for _, s := range r.Steps {
			patchedBefore[key] = patchedBefore[key] || len(s.Patched) > 0
		}
	}
	if !patchedBefore[ns+"/r1-a"] {
		t.Errorf("the interrupted run's report does not show r1-a's patch: %+v", rep)
	}
	for key, before := range secondWave {
		name := strings.TrimPrefix(key, ns+"/")
		if now := specState(t, byName[where[key]], ns, name); fmt.Sprint(now) != fmt.Sprint(before) {
			t.Errorf("second-wave cluster %s on %s was touched by the interrupted run:\nbefore %v\nafter  %v", name, where[key], before, now)
		}
	}

	res := e.applyOK(nil, "the resumed run over three management clusters", args...)
	if len(res) != len(where) {
		t.Fatalf("the resumed run reports %d clusters, want %d: %v", len(res), len(where), res)
	}
	for key, r := range res {
		if r.ManagementCluster != where[key] {
			t.Errorf("%s: resumed report row names %q, want %q", key, r.ManagementCluster, where[key])
		}
		if patchedBefore[key] {
			checkResumed(t, r, target)
		} else {
			checkPatchedOnce(t, r, target)
		}
		name := strings.TrimPrefix(key, ns+"/")
		if v := topologyVersion(t, byName[where[key]], ns, name); v != target {
			t.Errorf("%s on %s: spec.topology.version %s, want %s", name, where[key], v, target)
		}
	}

	// The same command once more, with the text report a user reads: every cluster is done, so
	// nothing is patched anywhere.
	done := map[string][]string{}
	for key, mc := range where {
		done[key] = specState(t, byName[mc], ns, strings.TrimPrefix(key, ns+"/"))
	}
	e.mustCapctl(nil, "upgrade", "apply", "--kubernetes-version", target, "--all-contexts", "-n", ns, "--timeout", "8m")
	for key, before := range done {
		if now := specState(t, byName[where[key]], ns, strings.TrimPrefix(key, ns+"/")); fmt.Sprint(now) != fmt.Sprint(before) {
			t.Errorf("%s on %s was changed by the run over a finished fleet:\nbefore %v\nafter  %v", key, where[key], before, now)
		}
	}
}

// checkRows checks that a view's n rows are exactly want (ns/name -> management cluster).
func checkRows(t *testing.T, what string, want map[string]string, n int, row func(int) (mgmt, key string)) {
	t.Helper()
	got := map[string]string{}
	for i := 0; i < n; i++ {
		mgmt, key := row(i)
		got[key] = mgmt
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: rows (cluster -> management cluster) %v, want %v", what, got, want)
	}
}

// checkSummaries checks the per-management-cluster summaries: each reachable one with its
// cluster count, and unreachable (with a reason) the one named.
func checkSummaries(t *testing.T, what string, got []multicluster.ManagementCluster, clusters map[string]int, unreachable string) {
	t.Helper()
	for _, m := range got {
		switch {
		case m.Name == unreachable:
			if m.Reachable || m.Error == "" {
				t.Errorf("%s: %s should be unreachable with a reason: %+v", what, m.Name, m)
			}
		case !m.Reachable || m.Error != "" || m.Clusters != clusters[m.Name] || m.Contract != "v1beta2" || len(m.Providers) != 4:
			t.Errorf("%s: summary of %s %+v, want reachable, contract v1beta2, 4 providers, %d cluster(s)", what, m.Name, m, clusters[m.Name])
		}
	}
	if n := len(clusters); unreachable != "" && len(got) != n+1 || unreachable == "" && len(got) != n {
		t.Errorf("%s: %d management cluster summaries: %+v", what, len(got), got)
	}
}
