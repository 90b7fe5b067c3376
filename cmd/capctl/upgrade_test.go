package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/upgrade"
)

func TestUpgradeWithoutManagementCluster(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "kubeconfig")
	cfg := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(cfg, []byte("providers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"upgrade", "plan"},
		{"upgrade", "plan", "--kubernetes-version", "v1.33.2"},
		{"upgrade", "apply", "--contract", "v1beta2"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", missing, "--config", cfg)...)
		if code == 0 || !strings.Contains(errOut, missing) {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}

func TestUpgradePlanUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"upgrade", "apply"},
		{"upgrade", "apply", "--contract", "v1beta1"},
		{"upgrade", "apply", "--contract", "v1beta2", "--core", "cluster-api:v1.14.0"},
		{"upgrade", "apply", "--core", "cluster-api"},
		{"upgrade", "apply", "--core", "aws:v1.0.0"},
		{"upgrade", "apply", "-i", "docker:1.x"},
		{"upgrade", "plan", "--kubernetes-version", "v1.33"},
		{"upgrade", "plan", "--kubernetes-version", "v1.33.2", "-o", "xml"},
	} {
		// An unreachable kubeconfig proves validation happens before any cluster call.
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))...)
		if code == 0 || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, stderr %s", args, code, errOut)
		}
	}
}

// A providers' plan file (upgrade plan --save without --kubernetes-version) goes to the providers'
// apply: its own checks, before any cluster call, and no fleet flag with it.
func TestUpgradeApplyProviderPlanFile(t *testing.T) {
	plan := filepath.Join(t.TempDir(), "providers.json")
	body := `{"apiVersion": "capctl.io/v1alpha1", "kind": "ProviderUpgradePlan", "contract": "v1beta2",
  "providers": [{"namespace": "capd-system", "providerName": "docker", "type": "InfrastructureProvider", "from": "v1.13.5", "to": "v1.14.0"}],
  "digest": "sha256:0000"}`
	if err := os.WriteFile(plan, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	_, errOut, code := runCapctl(t, "upgrade", "apply", "--plan", plan, "--kubeconfig", missing)
	if code == 0 || !strings.Contains(errOut, "was edited after it was saved") {
		t.Errorf("edited providers' plan: exit %d\n%s", code, errOut)
	}
	_, errOut, code = runCapctl(t, "upgrade", "apply", "--plan", plan, "--timeout", "2m", "--kubeconfig", missing)
	if code == 0 || !strings.Contains(errOut, "--timeout does not apply to a providers' upgrade plan") {
		t.Errorf("fleet flag with a providers' plan: exit %d\n%s", code, errOut)
	}
}

// upgradeConfig writes a clusterctl.yaml pointing the four Cluster API providers at the fixture
// repository.
func upgradeConfig(t *testing.T, fixtures string) string {
	t.Helper()
	dir := t.TempDir()
	repo := filepath.Join(fixtures, "repository")
	body := "overridesFolder: " + filepath.Join(dir, "overrides") + "\nproviders:\n"
	for _, p := range []struct{ name, typ, label, file string }{
		{"cluster-api", "CoreProvider", "cluster-api", "core-components.yaml"},
		{"kubeadm", "BootstrapProvider", "bootstrap-kubeadm", "bootstrap-components.yaml"},
		{"kubeadm", "ControlPlaneProvider", "control-plane-kubeadm", "control-plane-components.yaml"},
		{"docker", "InfrastructureProvider", "infrastructure-docker", "infrastructure-components.yaml"},
	} {
		body += "- name: " + p.name + "\n  type: " + p.typ + "\n  url: " + filepath.Join(repo, p.label, "latest", p.file) + "\n"
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUpgradeCommands(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	crds := filepath.Join(fixtures, "crds")
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{
		filepath.Join(crds, "cluster.x-k8s.io.yaml"), filepath.Join(crds, "controlplane.cluster.x-k8s.io.yaml"),
		filepath.Join(fixtures, "repository", "cert-manager", "v1.21.1", "cert-manager-crds.yaml"),
	}})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := upgradeConfig(t, fixtures)
	t.Run("fleet plan", func(t *testing.T) { testUpgradeFleetPlan(t, env) })
	t.Run("provider plan", func(t *testing.T) { testUpgradeProviderPlan(t, env, cfg) })
	t.Run("apply", func(t *testing.T) { testUpgradeApply(t, env, cfg) })
	t.Run("history with records it cannot read or trust", func(t *testing.T) { testUpgradeHistoryPartial(t, env) })
	t.Run("auth can-i over the run's clusters", func(t *testing.T) { testAuthCanI(t, env) })
}

// testAuthCanI: `auth can-i` checks the management cluster, and a move's target only when
// --to-kubeconfig names it.
func testAuthCanI(t *testing.T, env *testenv.Env) {
	out, errOut, code := runCapctl(t, "auth", "can-i", "move", "-n", "default", "--kubeconfig", env.Kubeconfig)
	if code != 0 || !regexp.MustCompile(`source cluster https://\S+: yes`).MatchString(out) || !strings.Contains(out, "target cluster: not checked") {
		t.Errorf("can-i move without a target: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, "auth", "can-i", "move", "-n", "default", "--kubeconfig", env.Kubeconfig, "--to-kubeconfig", env.Kubeconfig)
	if code != 0 || !regexp.MustCompile(`target cluster https://\S+: yes`).MatchString(out) {
		t.Errorf("can-i move with a target: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, "auth", "can-i", "upgrade", "apply", "--kubeconfig", env.Kubeconfig)
	if code != 0 || !regexp.MustCompile(`management cluster https://\S+: yes`).MatchString(out) {
		t.Errorf("can-i upgrade apply: exit %d\n%s\n%s", code, out, errOut)
	}
}

// testUpgradeHistoryPartial: other writers' ConfigMaps under the records' label, one that is not
// JSON and one forged with terminal escape sequences, hide nothing: the good records are listed,
// the unreadable one is named with exit 3, and no control character reaches the terminal.
func testUpgradeHistoryPartial(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	env.CreateNamespaces(t, fleetupgrade.AuditNamespace)
	record := func(name, data string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: fleetupgrade.AuditNamespace, Name: name, Labels: map[string]string{fleetupgrade.AuditLabel: "fleet-upgrade"}},
			Data: map[string]string{"record.json": data}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	good, _ := json.Marshal(fleetupgrade.RolloutRecord{Name: "fleet-upgrade-good", User: "alice", Started: time.Now().UTC().Truncate(time.Second), State: fleetupgrade.RolloutSucceeded, KubernetesVersion: "v1.35.0"})
	forged, _ := json.Marshal(fleetupgrade.RolloutRecord{Name: "fleet-upgrade-forged", User: "mallory\x1b]0;owned\x07\x1b[2J", Started: time.Now().UTC().Add(-time.Hour).Truncate(time.Second), State: "Succeeded\u202e", KubernetesVersion: "v1.35.0"})
	record("fleet-upgrade-good", string(good))
	record("fleet-upgrade-forged", string(forged))
	record("fleet-upgrade-broken", "{not json")

	out, errOut, code := runCapctl(t, "upgrade", "history", "--kubeconfig", env.Kubeconfig)
	if code != 3 || !strings.Contains(out, "fleet-upgrade-good") || !strings.Contains(out, "fleet-upgrade-forged") ||
		!strings.Contains(errOut, "1 rollout record(s) could not be read, so this history is partial") || !strings.Contains(errOut, "ConfigMap capctl-system/fleet-upgrade-broken: the rollout record is not readable") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `mallory\x1b]0;owned\x07\x1b[2J`) || !strings.Contains(out, `Succeeded\u202e`) {
		t.Errorf("the forged record's escapes are not shown as text:\n%s", out)
	}
	for _, o := range []string{out, errOut} {
		if strings.ContainsAny(o, "\x1b\x07\u202e") {
			t.Errorf("control characters printed: %q", o)
		}
	}
	out, _, code = runCapctl(t, "upgrade", "history", "-o", "json", "--kubeconfig", env.Kubeconfig)
	var recs []fleetupgrade.RolloutRecord
	if err := json.Unmarshal([]byte(out), &recs); code != 3 || err != nil || len(recs) != 2 {
		t.Errorf("json: exit %d, %v\n%s", code, err, out)
	}
}

// testUpgradeApply runs on the inventory testUpgradeProviderPlan wrote (core v1.13.4, docker
// v1.14.0, no components installed): bad input fails before any change, a dry run shows the plan.
func testUpgradeApply(t *testing.T, env *testenv.Env, cfg string) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--core", "cluster-api:v1.13.3"}, "downgrades are not supported"},
		{[]string{"--core", "cluster-api:v1.13.9"}, "is not in the repository of cluster-api (available: v1.14.0, v1.13.5, v1.13.4, v1.12.11, v1.10.10)"},
		{[]string{"-i", "aws:v2.0.0"}, `no InfrastructureProvider "aws" is installed`},
	} {
		_, errOut, code := runCapctl(t, append([]string{"upgrade", "apply", "--kubeconfig", env.Kubeconfig, "--config", cfg}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %s", tc.args, code, errOut)
		}
	}
	out, errOut, code := runCapctl(t, "upgrade", "apply", "--contract", "v1beta2", "--dry-run", "--kubeconfig", env.Kubeconfig, "--config", cfg)
	if code != 0 || !strings.Contains(out, "Would upgrade capi-system/cluster-api (CoreProvider) from v1.13.4 to v1.14.0") || !strings.Contains(out, "Dry run: nothing was changed.") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	items, err := inventory.List(context.Background(), env.Client)
	if err != nil || items[0].Version != "v1.13.4" {
		t.Errorf("dry run changed the inventory: %+v %v", items, err)
	}
}

// writeInventory records cluster-api at coreVersion and docker v1.14.0 in the inventory (no
// components installed), in their namespaces.
func writeInventory(t *testing.T, env *testenv.Env, coreVersion string) {
	t.Helper()
	ctx := context.Background()
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, coreVersion, "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"),
	} {
		env.CreateNamespaces(t, p.Namespace)
		if err := inventory.Write(ctx, env.Client, p); err != nil {
			t.Fatal(err)
		}
	}
}

func testUpgradeProviderPlan(t *testing.T, env *testenv.Env, cfg string) {
	_, errOut, code := runCapctl(t, "upgrade", "plan", "--kubeconfig", env.Kubeconfig, "--config", cfg)
	if code == 0 || !strings.Contains(errOut, "capctl init") {
		t.Errorf("no inventory: exit %d, %s", code, errOut)
	}
	writeInventory(t, env, "v1.13.4")
	out, errOut, code := runCapctl(t, "upgrade", "plan", "--kubeconfig", env.Kubeconfig, "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Management group: capi-system/cluster-api",
		"Latest release available for the v1beta2 Cluster API contract version:",
		"NAME                    NAMESPACE     TYPE                     CURRENT VERSION   NEXT VERSION         CONTRACT",
		"cluster-api             capi-system   CoreProvider             v1.13.4           v1.14.0              v1beta2",
		"infrastructure-docker   capd-system   InfrastructureProvider   v1.14.0           Already up to date   v1beta2",
		"capctl upgrade apply --contract v1beta2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "Checking new release availability") {
		t.Errorf("stderr: %s", errOut)
	}
	out, _, code = runCapctl(t, "upgrade", "plan", "-o", "json", "--kubeconfig", env.Kubeconfig, "--config", cfg)
	var plan upgrade.ProviderPlan
	if err := json.Unmarshal([]byte(out), &plan); code != 0 || err != nil || len(plan.Contracts) != 1 || plan.Contracts[0].Providers[0].NextVersion != "v1.14.0" {
		t.Errorf("json: exit %d, %v\n%s", code, err, out)
	}
}

func testUpgradeFleetPlan(t *testing.T, env *testenv.Env) {
	testenv.CreateFromFile(t, env.Client, filepath.Join(testenv.RepoRoot(), "pkg", "fleetupgrade", "testdata", "fleet.yaml"))

	out, errOut, code := runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "--kubeconfig", env.Kubeconfig)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Waves in order, control plane steps before the workers'.
	order := []string{"fleet/bravo", "fleet/charlie", "fleet/alpha", "fleet/juliet", "fleet/delta", "Clusters that cannot be planned:", "fleet/echo"}
	last := -1
	for _, s := range order {
		i := strings.Index(out, s)
		if i <= last {
			t.Fatalf("%q missing or out of order in:\n%s", s, out)
		}
		last = i
	}
	for _, s := range []string{
		"control plane v1.31.5 -> control plane v1.32.1 -> control plane v1.33.2 -> workers v1.33.2",
		"control plane v1.32.x -> workers v1.32.x -> control plane v1.33.2 -> workers v1.33.2",
		"Already up to date",
		"5 cluster(s) in 3 wave(s), 5 cannot be planned",
		"ClusterClass classes/narrow lists no v1.32 version",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("missing %q in:\n%s", s, out)
		}
	}

	out, errOut, code = runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "-o", "json", "--kubeconfig", env.Kubeconfig)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var plan fleetupgrade.FleetPlan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(plan.Waves) != 3 || *plan.Waves[0].Wave != 1 || plan.Waves[2].Wave != nil || len(plan.Unplannable) != 5 {
		t.Errorf("json plan: %+v", plan)
	}
	out, _, code = runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "-o", "yaml", "--kubeconfig", env.Kubeconfig)
	if code != 0 || !strings.Contains(out, "kubernetesVersion: v1.33.2") || !strings.Contains(out, "component: ControlPlane") {
		t.Errorf("yaml: exit %d\n%s", code, out)
	}
}

func TestUpgradeApplyKubernetesVersionFlags(t *testing.T) {
	o, err := parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "1.35.1", "--wave", "2", "--max-parallel", "3",
		"--timeout", "90s", "-n", "prod", "-l", "env=prod", "--dry-run", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	f := o.Fleet
	if f == nil || f.KubernetesVersion != "v1.35.1" || f.Selection.Wave == nil || *f.Selection.Wave != 2 || f.Rollout.MaxParallel != 3 ||
		f.Timeout != 90*time.Second || f.Selection.Namespace != "prod" || f.Selection.Selector != "env=prod" || !f.DryRun || o.Output != output.JSON {
		t.Errorf("fleet request %+v (options %+v)", f, o)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1")
	if err != nil || o.Fleet.Selection.Wave != nil || o.Fleet.Rollout.MaxParallel != 1 || o.Fleet.Timeout != 30*time.Minute {
		t.Errorf("defaults: %+v %v", o.Fleet, err)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1", "--max-parallel", "25%", "--canary", "2", "--max-failures", "3")
	if err != nil || o.Fleet.Rollout != (fleetupgrade.Rollout{MaxParallelPercent: 25, Canary: 2, MaxFailures: 3}) {
		t.Errorf("rollout flags: %+v %v", o.Fleet, err)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1", "--soak", "90s", "--gate-command", "./smoke.sh", "--window", "Sat,Sun 02:00-06:00 UTC", "--no-wait")
	if err != nil || o.Fleet.Rollout != (fleetupgrade.Rollout{MaxParallel: 1, Soak: fleetupgrade.Duration(90 * time.Second), GateCommand: "./smoke.sh", Window: "Sat,Sun 02:00-06:00 UTC"}) || !o.Fleet.NoWait {
		t.Errorf("gate flags: %+v %v", o.Fleet, err)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--plan", "p.json", "--timeout", "5m", "--dry-run", "--no-wait")
	if err != nil || o.Fleet.Plan != "p.json" || o.Fleet.KubernetesVersion != "" || o.Fleet.Timeout != 5*time.Minute || !o.Fleet.DryRun || !o.Fleet.NoWait {
		t.Errorf("--plan: %+v %v", o.Fleet, err)
	}
	// Without --kubernetes-version, --save writes the providers' plan.
	if o, err := parseOptions(t, newCmdUpgradePlan, "--save", "p.json"); err != nil || o.Save != "p.json" || o.KubernetesVersion != "" {
		t.Errorf("--save of the providers' plan: %+v %v", o, err)
	}
	if _, err := parseOptions(t, newCmdUpgradePlan, "--save", "p.json", "--canary", "1"); err == nil {
		t.Error("--canary without --kubernetes-version accepted")
	}
	sp, err := parseOptions(t, newCmdUpgradePlan, "--kubernetes-version", "v1.35.1", "--save", "p.json", "--canary", "1", "--max-parallel", "10%")
	if err != nil || sp.FleetPlanRequest.Save != "p.json" || sp.Rollout != (fleetupgrade.Rollout{Canary: 1, MaxParallelPercent: 10}) {
		t.Errorf("plan --save: %+v %v", sp, err)
	}
	p, err := parseOptions(t, newCmdUpgradePlan, "--kubernetes-version", "v1.35.1", "-n", "prod", "-l", "tier=gold")
	if err != nil || p.Selection.Namespace != "prod" || p.Selection.Selector != "tier=gold" {
		t.Errorf("plan selection: %+v %v", p, err)
	}
	for _, args := range [][]string{
		{"--kubernetes-version", "v1.35"},
		{"--kubernetes-version", "v1.35.1", "--contract", "v1beta2"},
		{"--kubernetes-version", "v1.35.1", "-i", "docker:v1.14.0"},
		{"--kubernetes-version", "v1.35.1", "--max-parallel", "0"},
		{"--kubernetes-version", "v1.35.1", "--timeout", "0s"},
		{"--kubernetes-version", "v1.35.1", "-n", "a", "-A"},
		{"--wave", "1"},
		{"--contract", "v1beta2", "-n", "prod"},
		{"--plan", "p.json", "--kubernetes-version", "v1.35.1"},
		{"--plan", "p.json", "-n", "prod"},
		{"--plan", "p.json", "-l", "a=b"},
		{"--plan", "p.json", "--wave", "1"},
		{"--plan", "p.json", "--canary", "1"},
		{"--plan", "p.json", "--max-parallel", "2"},
		{"--plan", "p.json", "--contract", "v1beta2"},
		{"--kubernetes-version", "v1.35.1", "--max-parallel", "0%"},
		{"--kubernetes-version", "v1.35.1", "--max-parallel", "150%"},
		{"--canary", "1"},
		{"--kubernetes-version", "v1.35.1", "--soak", "soon"},
		{"--plan", "p.json", "--soak", "1m"},
		{"--plan", "p.json", "--gate-command", "true"},
		{"--plan", "p.json", "--window", "Sat 02:00-06:00"},
		{"--kubernetes-version", "v1.35.1", "--window", ""},
		{"--kubernetes-version", "v1.35.1", "--window", " "},
	} {
		if _, err := parseOptions(t, newCmdUpgradeApply, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestUpgradeHistoryFlags(t *testing.T) {
	o, err := parseOptions(t, newCmdUpgradeHistory, "fleet-upgrade-20261205-020000-a1b2c3", "-o", "json")
	if err != nil || o.Request.Name != "fleet-upgrade-20261205-020000-a1b2c3" || o.Output != output.JSON {
		t.Errorf("history NAME: %+v %v", o, err)
	}
	if o, err = parseOptions(t, newCmdUpgradeHistory); err != nil || o.Request.Name != "" {
		t.Errorf("history: %+v %v", o, err)
	}
	if _, err := parseOptions(t, newCmdUpgradeHistory, "a", "b"); err == nil {
		t.Error("two names accepted")
	}
}
