package fleetupgrade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// machineNames lists the Machines of namespace ns by their owner label (control plane or
// MachineDeployment): "a-md=a-md-v1-34-2".
func machineNames(t *testing.T, c client.Client, ns string) map[string][]string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capiV1beta2.WithKind("MachineList"))
	if err := c.List(testenv.Context(t), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range list.Items {
		owner := m.GetLabels()[deploymentNameLabel]
		if owner == "" {
			owner = m.GetLabels()[ClusterNameLabel] + "-cp"
		}
		out[owner] = append(out[owner], m.GetName())
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// TestRotateFleetOnAPIServer: the machine rotation rolled by the fleet upgrade's engine. A dry
// run changes nothing; with --canary 1 a failing gate stops after the canary with only its
// Machines replaced; the re-run at the same rollout.after (the resume) patches nothing twice and
// replaces each other cluster's Machines once; the history holds both runs. The standIn does
// what the controllers do for rollout.after (Machines created before it are replaced).
func TestRotateFleetOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "rot")
	for _, n := range []string{"a", "b", "c"} {
		createFleetCluster(t, c, "rot", n, "v1.34.2", "")
	}
	startStandIn(t, c, 6)
	// rollout.after holds seconds: the Machines must be older than the rotation's second.
	time.Sleep(1100 * time.Millisecond)
	at := time.Now().UTC().Truncate(time.Second)
	atText := at.Format(time.RFC3339)
	before := machineNames(t, c, "rot")

	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	gate := fmt.Sprintf(`test -f %s || { echo "smoke failed on $CAPCTL_CLUSTERS at $CAPCTL_ROLLOUT_AFTER"; exit 3; }`, ok)
	var p progressLines
	req := FleetApplyRequest{Rotation: &Rotation{After: at}, Selection: FleetSelection{Namespace: "rot"},
		Rollout: Rollout{Canary: 1, MaxParallel: 2, GateCommand: gate}, Timeout: 30 * time.Second, PollInterval: 200 * time.Millisecond, Progress: p.add}

	gens := generations(t, c, "rot")
	dry := req
	dry.DryRun = true
	rep, err := ApplyFleet(ctx, c, dry)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if got := resultsOf(rep); got["rot/a"] != ResultWouldPatch || got["rot/b"] != ResultWouldPatch || got["rot/c"] != ResultWouldPatch {
		t.Errorf("dry run results %v", got)
	}
	if rep.Preflight == nil || rep.Preflight.DryRunPatches != 3 || rep.RolloutAfter != atText {
		t.Errorf("dry run: preflight %+v, rolloutAfter %q", rep.Preflight, rep.RolloutAfter)
	}
	if after := generations(t, c, "rot"); fmt.Sprint(after) != fmt.Sprint(gens) {
		t.Errorf("the dry run changed objects: %v -> %v", gens, after)
	}

	rep, err = ApplyFleet(ctx, c, req)
	if !errors.Is(err, ErrFleetStopped) || rep.Stop == nil || rep.Stop.Gate != GateCommand {
		t.Fatalf("err = %v, report %+v", err, rep)
	}
	if want := fmt.Sprintf("[smoke failed on rot/a at %s]", atText); fmt.Sprint(rep.Stop.Details) != want {
		t.Errorf("the gate saw %v, want %s", rep.Stop.Details, want)
	}
	if got := resultsOf(rep); got["rot/a"] != ResultRotated || got["rot/b"] != ResultNotStarted || got["rot/c"] != ResultNotStarted {
		t.Errorf("results %v", got)
	}
	if msg := EndError(rep, err).Error(); !strings.Contains(msg, "run the same command again with --rollout-after "+atText) {
		t.Errorf("the stop does not say how to resume: %s", msg)
	}
	mid := machineNames(t, c, "rot")
	for owner, names := range mid {
		replaced := fmt.Sprint(names) != fmt.Sprint(before[owner])
		if canary := strings.HasPrefix(owner, "a-"); replaced != canary || len(names) != 1 {
			t.Errorf("after the canary, %s has Machines %v (before %v)", owner, names, before[owner])
		}
	}
	gensCanary := generations(t, c, "rot")

	if err := os.WriteFile(ok, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err = ApplyFleet(ctx, c, req)
	if err != nil {
		t.Fatalf("resume: %v (%+v)", err, rep)
	}
	if got := resultsOf(rep); got["rot/a"] != ResultUpToDate || got["rot/b"] != ResultRotated || got["rot/c"] != ResultRotated {
		t.Errorf("resume results %v", got)
	}
	end := generations(t, c, "rot")
	for _, k := range []string{"KubeadmControlPlane/a-cp", "MachineDeployment/a-md", "Cluster/a"} {
		if end[k] != gensCanary[k] {
			t.Errorf("the resume patched the canary's %s again: generation %d -> %d", k, gensCanary[k], end[k])
		}
	}
	final := machineNames(t, c, "rot")
	for owner, names := range final {
		if len(names) != 1 || fmt.Sprint(names) == fmt.Sprint(before[owner]) || (strings.HasPrefix(owner, "a-") && fmt.Sprint(names) != fmt.Sprint(mid[owner])) {
			t.Errorf("%s: Machines %v (before %v, after the canary %v): each must be replaced once", owner, names, before[owner], mid[owner])
		}
	}

	recs, err := History(ctx, c, HistoryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, r := range recs {
		if r.RolloutAfter != atText || r.KubernetesVersion != "" {
			t.Errorf("record %s: rolloutAfter %q, kubernetesVersion %q", r.Name, r.RolloutAfter, r.KubernetesVersion)
		}
		states[r.State]++
	}
	if states[RolloutStopped] != 1 || states[RolloutSucceeded] != 1 || len(recs) != 2 {
		t.Errorf("history states %v of %d records", states, len(recs))
	}
}
