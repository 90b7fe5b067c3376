package main

import (
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/upgrade"
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
		*o.Fleet.Selection.Wave != 1 || o.Fleet.MaxParallel != 2 || o.Fleet.Selection.Selector != "env=prod" {
		t.Errorf("apply --contexts: %+v %v", o, err)
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

func TestRenderFleetOverManagementClusters(t *testing.T) {
	plan := &upgrade.FleetPlanView{
		Summary: multicluster.Summary{ManagementClusters: []multicluster.ManagementCluster{
			{Name: "eu-1", Reachable: true, Contract: "v1beta2", Clusters: 1},
			{Name: "eu-2", Error: "the API server does not answer"},
		}},
		FleetPlan: upgrade.FleetPlan{KubernetesVersion: "v1.35.0", Waves: []upgrade.FleetWave{{Clusters: []upgrade.ClusterUpgrade{
			{ManagementCluster: "eu-1", Namespace: "p", Name: "a", ControlPlaneVersion: "v1.34.2", WorkersVersion: "v1.34.2",
				Steps: []upgrade.UpgradeStep{{Component: upgrade.ControlPlane, Version: "v1.35.0"}}},
		}}}},
	}
	var b strings.Builder
	if err := renderFleetPlanView(&b, plan); err != nil {
		t.Fatal(err)
	}
	out := squeeze(b.String())
	for _, want := range []string{"MANAGEMENT WAVE CLUSTER CLUSTERCLASS", "eu-1 - p/a - v1.34.2 v1.34.2 control plane v1.35.0", "eu-2 unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	rep := &upgrade.FleetApplyReport{KubernetesVersion: "v1.35.0",
		ManagementClusters: plan.ManagementClusters[:1],
		Waves: []upgrade.FleetWaveReport{{Wave: "1", Clusters: []upgrade.FleetClusterReport{
			{ManagementCluster: "eu-1", Namespace: "p", Name: "a", Result: upgrade.ResultFailed}}}},
		Failure: &upgrade.FleetApplyFailure{ManagementCluster: "eu-1", Namespace: "p", Name: "a", Step: "control plane v1.35.0", Reason: "timed out", Describe: []string{"Cluster p/a"}},
	}
	b.Reset()
	if err := renderFleetApply(&b, rep); err != nil {
		t.Fatal(err)
	}
	out = squeeze(b.String())
	for _, want := range []string{"MANAGEMENT WAVE CLUSTER RESULT", "eu-1 1 p/a Failed", "eu-1 ok v1beta2", "Stopped at cluster p/a on eu-1, step control plane v1.35.0: timed out",
		"capctl describe cluster a -n p --kubeconfig-context eu-1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
}

// squeeze collapses the runs of spaces of table cells, line by line.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
