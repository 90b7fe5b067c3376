package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/fleetupgrade"
)

func TestUpgradeContextsFlagsToOptions(t *testing.T) {
	p, err := parseOptions(t, newCmdUpgradePlan, "--contexts", "eu-1,us-1")
	if err != nil || strings.Join(p.Contexts.Contexts, ",") != "eu-1,us-1" || p.Contexts.All || p.KubernetesVersion != "" {
		t.Errorf("plan --contexts: %+v %v", p, err)
	}
	p, err = parseOptions(t, newCmdUpgradePlan, "--kubernetes-version", "1.35.1", "--all-contexts", "-n", "prod", "-l", "tier=gold", "-o", "json")
	if err != nil || !p.Contexts.All || p.KubernetesVersion != "v1.35.1" || p.Selection.Namespace != "prod" || p.Selection.Selector != "tier=gold" {
		t.Errorf("plan --kubernetes-version --all-contexts: %+v %v", p, err)
	}
	o, err := parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1", "--contexts", "a,b,c", "--wave", "1", "--max-parallel", "2", "-l", "env=prod")
	if err != nil || strings.Join(o.Contexts.Contexts, ",") != "a,b,c" || o.Fleet == nil || o.Fleet.KubernetesVersion != "v1.35.1" ||
		*o.Fleet.Selection.Wave != 1 || o.Fleet.Rollout.MaxParallel != 2 || o.Fleet.Selection.Selector != "env=prod" {
		t.Errorf("apply --contexts: %+v %v", o, err)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--plan", "p.json", "--contexts", "a,b")
	if err != nil || strings.Join(o.Contexts.Contexts, ",") != "a,b" || o.Fleet == nil || o.Fleet.Plan != "p.json" {
		t.Errorf("apply --plan --contexts: %+v %v", o, err)
	}
	o, err = parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1", "--all-contexts", "-A")
	if err != nil || !o.Contexts.All || o.Fleet == nil {
		t.Errorf("apply --all-contexts: %+v %v", o, err)
	}
	for _, c := range []struct {
		build func() error
		want  string
	}{
		{func() error {
			_, err := parseOptions(t, newCmdUpgradeApply, "--contract", "v1beta2", "--all-contexts")
			return err
		}, "they need --kubernetes-version"},
		{func() error {
			_, err := parseOptions(t, newCmdUpgradeApply, "--kubernetes-version", "v1.35.1", "--contexts", "a", "--all-contexts")
			return err
		}, "cannot be used together"},
		{func() error { _, err := parseOptions(t, newCmdUpgradePlan, "--contexts", "a,a"); return err }, `names context "a" twice`},
		{func() error {
			_, err := parseOptions(t, newCmdUpgradePlan, "--contexts", "a", "--kubeconfig-context", "b")
			return err
		}, ""},
	} {
		err := c.build()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error with %q", err, c.want)
		}
	}
}

// TestUpgradePlanAcrossContexts runs `upgrade plan` over two real API servers and a context whose
// API server does not answer: one view naming each row's management cluster, the drift of the
// core provider, and exit code 3 for the unreachable one while the others are complete.
func TestUpgradePlanAcrossContexts(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	crds := filepath.Join(fixtures, "crds")
	envs := testenv.StartN(t, 2, testenv.Options{CRDPaths: []string{
		filepath.Join(crds, "cluster.x-k8s.io.yaml"), filepath.Join(crds, "controlplane.cluster.x-k8s.io.yaml"),
		filepath.Join(fixtures, "repository", "cert-manager", "v1.21.1", "cert-manager-crds.yaml"),
	}})
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfg := upgradeConfig(t, fixtures)
	var paths []string
	for i, e := range envs {
		name := []string{"mgmt-a", "mgmt-b"}[i]
		paths = append(paths, e.KubeconfigAs(t, name))
		testenv.CreateFromFile(t, e.Client, filepath.Join(testenv.RepoRoot(), "pkg", "fleetupgrade", "testdata", "fleet.yaml"))
		writeInventory(t, e, []string{"v1.13.4", "v1.14.0"}[i])
	}
	t.Setenv("KUBECONFIG", strings.Join(paths, string(os.PathListSeparator)))

	out, errOut, code := runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "--all-contexts", "-o", "json")
	if code != 0 {
		t.Fatalf("fleet plan: exit %d: %s", code, errOut)
	}
	var fleet fleetupgrade.FleetPlanView
	if err := json.Unmarshal([]byte(out), &fleet); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	perWave := map[string]int{}
	for _, w := range fleet.Waves {
		for _, c := range w.Clusters {
			perWave[w.Name()+" "+c.ManagementCluster]++
		}
	}
	if len(fleet.Waves) != 3 || perWave["1 mgmt-a"] == 0 || perWave["1 mgmt-a"] != perWave["1 mgmt-b"] || len(fleet.Unplannable) != 10 ||
		len(fleet.ManagementClusters) != 2 || fleet.ManagementClusters[0].Clusters != 10 || fleet.ManagementClusters[1].Problems != 5 {
		t.Errorf("fleet plan over two management clusters: waves %v, %d unplannable, %+v", perWave, len(fleet.Unplannable), fleet.ManagementClusters)
	}

	// A plan saved across both management clusters is applied across them (here, a dry run that
	// reaches both preflights: the testdata's clusters are not settled, so it stops there), and
	// refused without --contexts, naming them.
	plan := filepath.Join(t.TempDir(), "plan.json")
	if _, errOut, code := runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "--all-contexts", "--save", plan); code != 0 {
		t.Fatalf("plan --save: exit %d: %s", code, errOut)
	}
	out, errOut, code = runCapctl(t, "upgrade", "apply", "--plan", plan, "--contexts", "mgmt-a,mgmt-b", "--dry-run")
	if strings.Contains(errOut, "they need") || !strings.Contains(errOut, "Preflight: cluster-api v1.13.4") || !strings.Contains(errOut, "Preflight: cluster-api v1.14.0") ||
		!strings.Contains(errOut, "cluster fleet/bravo on mgmt-b is not settled") {
		t.Errorf("apply --plan --contexts: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCapctl(t, "upgrade", "apply", "--plan", plan, "--kubeconfig-context", "mgmt-a", "--dry-run")
	if code == 0 || !strings.Contains(errOut, "run with --contexts mgmt-a,mgmt-b") {
		t.Errorf("apply --plan of two management clusters on one: exit %d\n%s", code, errOut)
	}

	out, errOut, code = runCapctl(t, "upgrade", "plan", "--contexts", "mgmt-b,mgmt-a", "--config", cfg)
	if code != 0 {
		t.Fatalf("provider plan: exit %d: %s", code, errOut)
	}
	out = testenv.Squeeze(out)
	for _, want := range []string{
		"MANAGEMENT NAME NAMESPACE TYPE CURRENT VERSION NEXT VERSION CONTRACT",
		"mgmt-b cluster-api capi-system CoreProvider v1.14.0 Already up to date v1beta2",
		"mgmt-a cluster-api capi-system CoreProvider v1.13.4 v1.14.0 v1beta2",
		"mgmt-a: capctl upgrade apply --contract v1beta2 --kubeconfig-context mgmt-a",
		"mgmt-b: already up to date for the v1beta2 contract",
		"cluster-api v1.13.4 (v1beta2) on mgmt-a, v1.14.0 (v1beta2) on mgmt-b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("provider plan lacks %q:\n%s", want, out)
		}
	}

	// A third context whose API server does not answer: exit 3, its row says so, the others
	// are planned.
	down := clientcmdapi.NewConfig()
	down.Clusters["down"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	down.AuthInfos["down"] = &clientcmdapi.AuthInfo{Token: "x"}
	down.Contexts["down"] = &clientcmdapi.Context{Cluster: "down", AuthInfo: "down"}
	downPath := filepath.Join(t.TempDir(), "down.kubeconfig")
	if err := clientcmd.WriteToFile(*down, downPath); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", strings.Join(append(paths, downPath), string(os.PathListSeparator)))
	out, errOut, code = runCapctl(t, "upgrade", "plan", "--kubernetes-version", "v1.33.2", "--all-contexts", "--connect-timeout", "2s")
	out = testenv.Squeeze(out)
	if code != 3 || !strings.Contains(out, "down unreachable") || !strings.Contains(out, "mgmt-a ok v1beta2") || !strings.Contains(out, "mgmt-b 1 fleet/") {
		t.Errorf("with an unreachable context: exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCapctl(t, "upgrade", "apply", "--kubernetes-version", "v1.33.2", "--all-contexts", "--connect-timeout", "2s")
	if code != 1 || !strings.Contains(errOut, "management cluster down cannot be used: management cluster unreachable") {
		t.Errorf("apply with an unreachable context: exit %d\n%s", code, errOut)
	}

	// On the same servers: a support bundle of all three contexts, replayed offline.
	t.Run("bundle across contexts", bundleAcrossContexts)
}
