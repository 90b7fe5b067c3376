package fleetupgrade

import (
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/kubesupport"
	"github.com/capctl/capctl/pkg/multicluster"
)

func TestRenderFleetOverManagementClusters(t *testing.T) {
	plan := &FleetPlanView{
		Summary: multicluster.Summary{ManagementClusters: []multicluster.ManagementCluster{
			{Name: "eu-1", Reachable: true, Contract: "v1beta2", Clusters: 1},
			{Name: "eu-2", Error: "the API server does not answer"},
		}},
		FleetPlan: FleetPlan{KubernetesVersion: "v1.35.0", Waves: []FleetWave{{Clusters: []ClusterUpgrade{
			{ManagementCluster: "eu-1", Namespace: "p", Name: "a", ControlPlaneVersion: "v1.34.2", WorkersVersion: "v1.34.2",
				Steps: []UpgradeStep{{Component: ControlPlane, Version: "v1.35.0"}}},
		}}}},
	}
	var b strings.Builder
	if err := RenderPlanView(&b, plan); err != nil {
		t.Fatal(err)
	}
	out := testenv.Squeeze(b.String())
	for _, want := range []string{"MANAGEMENT WAVE CLUSTER CLUSTERCLASS", "eu-1 - p/a - v1.34.2 v1.34.2 control plane v1.35.0", "eu-2 unreachable"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan output lacks %q:\n%s", want, out)
		}
	}
	rep := &FleetApplyReport{KubernetesVersion: "v1.35.0",
		ManagementClusters: plan.ManagementClusters[:1],
		Waves: []FleetWaveReport{{Wave: "1", Clusters: []FleetClusterReport{
			{ManagementCluster: "eu-1", Namespace: "p", Name: "a", Result: ResultFailed}}}},
		Failure: &FleetApplyFailure{ManagementCluster: "eu-1", Namespace: "p", Name: "a", Step: "control plane v1.35.0", Reason: "timed out", Describe: []string{"Cluster p/a"}},
	}
	b.Reset()
	if err := RenderApplyReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	out = testenv.Squeeze(b.String())
	for _, want := range []string{"MANAGEMENT WAVE CLUSTER RESULT", "eu-1 1 p/a Failed", "eu-1 ok v1beta2", "Stopped at cluster p/a on eu-1, step control plane v1.35.0: timed out",
		"capctl describe cluster a -n p --kubeconfig-context eu-1:"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
}

func TestRenderFleetApplyStopped(t *testing.T) {
	rep := &FleetApplyReport{KubernetesVersion: "v1.35.0", Waves: []FleetWaveReport{
		{Wave: "1", Seconds: 12.5, Clusters: []FleetClusterReport{
			{Namespace: "p", Name: "a", Result: ResultUpgraded, Seconds: 10, Steps: []FleetStepReport{
				{Component: ControlPlane, Version: "v1.35.0", Patched: []string{"KubeadmControlPlane a spec.version"}, Done: true},
				{Component: Workers, Version: "v1.35.0", Done: true}}},
			{Namespace: "p", Name: "b", Result: ResultFailed, Seconds: 2.5},
			{Namespace: "p", Name: "d", Result: ResultUpgraded, Seconds: 95, Steps: []FleetStepReport{
				{Component: ControlPlane, Version: "v1.35.0", Patched: []string{"Cluster d spec.topology.version"}, Seconds: 40, Done: true, TopologyPlan: true},
				{Component: ControlPlane, Version: "v1.36.0", Seconds: 30, Done: true, TopologyPlan: true},
				{Component: Workers, Version: "v1.36.0", TopologyPlan: true}}},
		}},
		{Wave: "2", Clusters: []FleetClusterReport{{Namespace: "p", Name: "c", Result: ResultNotStarted}}},
	}, Failure: &FleetApplyFailure{Namespace: "p", Name: "b", Step: "control plane v1.35.0", Reason: "timed out after 2s",
		Pending: []string{"KubeadmControlPlane b reports version v1.34.2, wants v1.35.0"}, Describe: []string{"Cluster p/b"}},
		Preflight: &FleetPreflight{DryRunPatches: 2, Providers: []ProviderSupport{
			{Namespace: "capi-system", Provider: "cluster-api", Version: "v1.14.2", Status: kubesupport.Supported, Range: "v1.31.x -> v1.37.x"},
			{Namespace: "capd-system", Provider: "infrastructure-docker", Version: "v1.14.2", Status: kubesupport.NotDeclared},
		}, Notes: []string{"provider capd-system/docker v1.14.2: infrastructure-docker does not declare which workload Kubernetes versions it supports: not checked"}}}
	var b strings.Builder
	if err := RenderApplyReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "capi-system/") || strings.HasPrefix(l, "capd-system/") {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
	}
	if got, want := strings.Join(rows, "\n"), "capi-system/cluster-api v1.14.2 v1.31.x -> v1.37.x supported\ncapd-system/infrastructure-docker v1.14.2 - not declared: not checked"; got != want {
		t.Errorf("provider rows\n%s\nwant\n%s", got, want)
	}
	for _, want := range []string{
		"the API server accepted the first patch of 2 cluster(s)",
		"control plane v1.35.0 -> workers v1.35.0 (already set)", "Wave 1: 12.5s", "Wave 2: not started",
		"control plane v1.35.0 (topology plan, 40s) -> control plane v1.36.0 (topology plan, 30s) -> workers v1.36.0 (topology plan)",
		"Stopped at cluster p/b, step control plane v1.35.0: timed out after 2s",
		"  - KubeadmControlPlane b reports version v1.34.2, wants v1.35.0", "capctl describe cluster b -n p:\nCluster p/b",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRenderRotation: a rotation's report names its step by its time, says what the preflight
// did not check, and its end says how to resume (the same time), not how to start a new one.
func TestRenderRotation(t *testing.T) {
	at := "2026-12-07T09:00:00Z"
	rep := &FleetApplyReport{RolloutAfter: at, Waves: []FleetWaveReport{
		{Wave: CanaryWave, Seconds: 26, Clusters: []FleetClusterReport{{Namespace: "p", Name: "a", Result: ResultRotated, Seconds: 26, Steps: []FleetStepReport{
			{Component: Machines, Version: at, Patched: []string{"MachineDeployment a-md-0 via Cluster p/a spec.topology.workers.machineDeployments[name=md-0].rollout.after"}, Seconds: 26, Done: true}}}}},
		{Wave: "-", Clusters: []FleetClusterReport{{Namespace: "p", Name: "b", Result: ResultNotStarted}}},
	}, Stop: &FleetStop{At: "after wave canary", Gate: GateCommand, Reason: "the gate command exited with status 1"},
		Preflight: &FleetPreflight{DryRunPatches: 2, Providers: []ProviderSupport{}, Notes: []string{"a machine rotation sets no version: the providers' supported Kubernetes versions are not checked"}}}
	var b strings.Builder
	if err := RenderApplyReport(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Not checked: a machine rotation sets no version", "machines rollout.after " + at, ResultRotated} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(already set)") {
		t.Errorf("a patched rotation step shown as already set:\n%s", out)
	}
	if msg := EndError(rep, ErrFleetStopped).Error(); !strings.Contains(msg, "run the same command again with --rollout-after "+at+" to continue") {
		t.Errorf("end: %s", msg)
	}
	held, missed := true, false
	rb := &FleetApplyReport{ClassRebase: "p/qs -> qs-2", Waves: []FleetWaveReport{{Wave: "-", Clusters: []FleetClusterReport{
		{Namespace: "p", Name: "a", Result: ResultRebased, Steps: []FleetStepReport{{Component: ClassComponent, Version: "qs-2", Patched: []string{"Cluster a spec.topology.classRef.name"},
			Predicted: []string{"MachineDeployment md-0"}, Replaced: []string{"MachineDeployment md-0"}, PredictionHeld: &held, Done: true}}},
		{Namespace: "p", Name: "b", Result: ResultRebased, Steps: []FleetStepReport{{Component: ClassComponent, Version: "qs-2", Patched: []string{"Cluster b spec.topology.classRef.name"},
			Predicted: []string{}, Replaced: []string{"control plane"}, PredictionHeld: &missed, Done: true}}},
	}}}}
	b.Reset()
	if err := RenderApplyReport(&b, rb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ClusterClass qs-2 (replaced MachineDeployment md-0, as planned)", "ClusterClass qs-2 (replaced control plane; the plan said (none))"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("rebase output lacks %q:\n%s", want, b.String())
		}
	}
	up := &FleetApplyReport{KubernetesVersion: "v1.35.0", Stop: rep.Stop}
	if msg := EndError(up, ErrFleetStopped).Error(); strings.Contains(msg, "--rollout-after") || !strings.Contains(msg, "run the same command again to continue") {
		t.Errorf("an upgrade's end: %s", msg)
	}
}
