package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/fleetupgrade"
)

// TestFleetKubernetesUpgradeLive: three in-memory ClusterClass clusters in two waves, at
// k8sVersion; `capctl upgrade apply --kubernetes-version` one minor up. The real topology, kubeadm
// control plane and MachineDeployment controllers replace every Machine; capctl waits for them
// wave by wave and reports the time per cluster and per wave.
func TestFleetKubernetesUpgradeLive(t *testing.T) {
	const (
		fleetNS = "fleet"
		target  = "v1.35.0"
	)
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	waves := map[string]string{"f-1": "1", "f-2": "2", "f-3": "2"}
	for _, name := range []string{"f-1", "f-2", "f-3"} {
		e.createCluster(mgmt, fleetNS, name, k8sVersion, 1)
	}
	for name, wave := range waves {
		e.waitAvailable(mgmt, fleetNS, name, 8*time.Minute) // three at once, on a loaded 2-core CI machine
		// A merge patch of the label alone: the controllers write the Cluster too, so a read and an
		// update could meet a conflict.
		setWave(t, mgmt, fleetNS, name, wave)
	}
	before := machineVersions(t, mgmt, fleetNS)
	if len(before) != 6 {
		t.Fatalf("want 6 Machines (3 clusters, 1 control plane + 1 worker each), got %v", before)
	}

	plan := e.mustCapctl(mgmt, "upgrade", "plan", "--kubernetes-version", target, "-n", fleetNS)
	if !strings.Contains(plan, "3 cluster(s) in 2 wave(s), 0 cannot be planned") {
		t.Fatalf("plan:\n%s", plan)
	}
	start := time.Now()
	out := e.mustCapctl(mgmt, "upgrade", "apply", "--kubernetes-version", target, "-n", fleetNS,
		"--max-parallel", "2", "--timeout", "8m", "-o", "json")
	total := time.Since(start)
	rep := fleetReport(t, out)
	if len(rep.Waves) != 2 || len(rep.Waves[0].Clusters) != 1 || len(rep.Waves[1].Clusters) != 2 {
		t.Fatalf("waves %+v", rep.Waves)
	}
	for _, w := range rep.Waves {
		t.Logf("wave %s: %.1fs", w.Wave, w.Seconds)
		for _, c := range w.Clusters {
			t.Logf("  cluster %s: %s in %.1fs, steps %+v", c.Name, c.Result, c.Seconds, c.Steps)
			if c.Result != fleetupgrade.ResultUpgraded {
				t.Errorf("cluster %s: %s", c.Name, c.Result)
			}
		}
	}
	t.Logf("fleet of 3 clusters, 2 waves, one minor up: %s", total.Round(100*time.Millisecond))

	assertReplaced(t, before, machineVersions(t, mgmt, fleetNS), target)
	for name := range waves {
		e.waitAvailable(mgmt, fleetNS, name, time.Minute)
	}
	// The same command again continues from the clusters' state: nothing left to do.
	again := e.mustCapctl(mgmt, "upgrade", "apply", "--kubernetes-version", target, "-n", fleetNS)
	if strings.Count(again, fleetupgrade.ResultUpToDate) != 3 {
		t.Errorf("re-run:\n%s", again)
	}
}

// machineVersions maps each Machine of ns to its spec.version.
func machineVersions(t *testing.T, c *livemgmt.Cluster, ns string) map[string]string {
	t.Helper()
	ms, err := listMachines(context.Background(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		v, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		out[m.GetName()] = v
	}
	return out
}
