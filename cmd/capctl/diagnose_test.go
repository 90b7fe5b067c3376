package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/multicluster"
	"sigs.k8s.io/yaml"
)

func TestDiagnoseClusterOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *DiagnoseClusterOptions
	cmd := newCmdDiagnoseCluster(newFactory(io), func(o *DiagnoseClusterOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"prod-1", "-n", "fleet", "--stuck-after", "30m", "--workload=false", "--workload-timeout", "2s", "-o", "json", "--color"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Name != "prod-1" || got.Namespace != "fleet" || got.StuckAfter != 30*time.Minute || got.Workload || got.WorkloadTimeout != 2*time.Second ||
		got.Output != output.JSON || got.Color == nil || !*got.Color {
		t.Errorf("options: %+v", got)
	}

	cmd = newCmdDiagnoseCluster(newFactory(io), func(o *DiagnoseClusterOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"prod-1"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.StuckAfter != diagnose.DefaultStuckAfter || !got.Workload || got.WorkloadTimeout != diagnose.DefaultWorkloadTimeout || got.Output != output.Text || got.Color != nil {
		t.Errorf("defaults: %+v", got)
	}
}

func TestDiagnoseClustersOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *DiagnoseClustersOptions
	cmd := newCmdDiagnoseClusters(newFactory(io), func(o *DiagnoseClustersOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-A", "--concurrency", "8", "-o", "yaml"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !got.AllNamespaces || got.Concurrency != 8 || got.Output != output.YAML || !got.Workload {
		t.Errorf("options: %+v", got)
	}
}

func TestGetProvidersOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *GetProvidersOptions
	cmd := newCmdGetProviders(newFactory(io), func(o *GetProvidersOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-o", "yaml"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Output != output.YAML {
		t.Errorf("options: %+v", got)
	}
}

// Bad flags fail as usage errors before any cluster is contacted.
func TestDiagnoseUsage(t *testing.T) {
	for _, args := range [][]string{
		{"diagnose", "cluster"},
		{"diagnose", "cluster", "Bad_Name"},
		{"diagnose", "cluster", "x", "--stuck-after", "0s"},
		{"diagnose", "cluster", "x", "--workload-timeout", "-1s"},
		{"diagnose", "cluster", "x", "-o", "xml"},
		{"diagnose", "clusters", "-A", "-n", "x"},
		{"diagnose", "clusters", "--concurrency", "0"},
		{"get", "providers", "-o", "table"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if code != 1 || !strings.Contains(errOut, "Usage:") || strings.Contains(errOut, "nonexistent") {
			t.Errorf("%v: exit %d, want a usage error:\n%s", args, code, errOut)
		}
	}
}

// TestDiagnoseCommands runs the commands against a real API server: exit code 0 for a healthy
// cluster, 2 for a stuck one, the text and JSON reports, the fleet and `get providers`.
func TestDiagnoseCommands(t *testing.T) {
	testenv.Integration(t)
	testenv.FixturesDir(t)
	ctx := context.Background()
	env := testenv.Start(t, testenv.Options{})
	diagnosetest.Management(ctx, t, env)
	diagnosetest.NewCluster("fine", "ok").Create(ctx, t, env)
	diagnosetest.NewCluster("stuck", "c").AddMachine(diagnosetest.Machine{Name: "c-md-a", Phase: "Provisioning", DataSecret: true,
		Conditions:      []diagnosetest.C{{Type: "InfrastructureReady", Status: "False", Reason: "NotReady", Message: "DockerMachine is not ready", Ago: 30 * time.Minute}},
		InfraConditions: []diagnosetest.C{{Type: "Ready", Status: "False", Reason: "ContainerProvisioning", Message: "Waiting for the container to start", Ago: 30 * time.Minute}},
	}).Create(ctx, t, env)
	kc := []string{"--kubeconfig", env.Kubeconfig, "--workload=false"}

	out, errOut, code := runCapctl(t, append([]string{"diagnose", "cluster", "ok", "-n", "fine"}, kc...)...)
	if code != 0 || !strings.Contains(out, "Cluster fine/ok: healthy") {
		t.Errorf("healthy: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, append([]string{"diagnose", "cluster", "c", "-n", "stuck"}, kc...)...)
	if code != exitProblemsFound || strings.Contains(errOut, "Error:") ||
		!strings.Contains(out, "ERROR machine-provisioning-infrastructure  Machine stuck/c-md-a  <- root cause") ||
		!strings.Contains(out, "kubectl logs -n capd-system deploy/capd-controller-manager | grep c-md-a") {
		t.Errorf("stuck: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = runCapctl(t, append([]string{"diagnose", "cluster", "c", "-n", "stuck", "-o", "json"}, kc...)...)
	var rep diagnose.Report
	if code != exitProblemsFound || json.Unmarshal([]byte(out), &rep) != nil || rep.Healthy || rep.Findings[0].Rule != diagnose.RuleMachineProvisioning ||
		rep.Findings[0].Responsible.Deployment != "capd-controller-manager" {
		t.Errorf("json: exit %d:\n%s", code, out)
	}
	out, errOut, code = runCapctl(t, append([]string{"diagnose", "clusters", "-A"}, kc...)...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitProblemsFound || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") ||
		!strings.Contains(lines[1], "stuck") || !strings.Contains(lines[1], "machine-provisioning-infrastructure") || !strings.Contains(lines[2], "healthy") {
		t.Errorf("fleet: exit %d:\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, append([]string{"diagnose", "clusters", "-n", "fine"}, kc...)...)
	if code != 0 || !strings.Contains(out, "healthy") {
		t.Errorf("healthy fleet: exit %d:\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCapctl(t, append([]string{"diagnose", "cluster", "nope", "-n", "fine"}, kc...)...)
	if code != 1 || !strings.Contains(errOut, `cluster "nope" not found`) {
		t.Errorf("not found: exit %d: %s", code, errOut)
	}

	out, errOut, code = runCapctl(t, "get", "providers", "--kubeconfig", env.Kubeconfig)
	if code != 0 || !strings.Contains(out, "NAMESPACE") || !strings.Contains(out, "capd-system") || !strings.Contains(out, "concurrency=5") ||
		!strings.Contains(out, "cluster-concurrency=10,machine-concurrency=10") || !strings.Contains(out, "cert-manager: ready") {
		t.Errorf("get providers: exit %d:\n%s\n%s", code, out, errOut)
	}
	out, _, code = runCapctl(t, "get", "providers", "--kubeconfig", env.Kubeconfig, "-o", "yaml")
	var m diagnose.Management
	if code != 0 || yaml.Unmarshal([]byte(out), &m) != nil || len(m.Providers) != 4 || m.Providers[0].Contract != "v1beta2" {
		t.Errorf("get providers yaml: exit %d:\n%s", code, out)
	}

	t.Run("from-bundle", func(t *testing.T) { replayFromBundle(t, env) })

	// A user who may not list Machines gets partial views, with exit code 3 (the view is
	// incomplete), never 0 nor a failure; the admin's describe of the same cluster exits 0.
	out, errOut, code = runCapctl(t, "describe", "cluster", "ok", "-n", "fine", "--kubeconfig", env.Kubeconfig)
	if code != 0 || strings.Contains(out, "Partial view") {
		t.Errorf("admin describe: exit %d:\n%s\n%s", code, out, errOut)
	}
	env.GrantAllBut(t, "no-machine-list", map[string][]string{"machines.cluster.x-k8s.io": {"list"}})
	partial := []string{"--kubeconfig", env.UserKubeconfig(t, "no-machine-list")}
	for _, args := range [][]string{
		{"describe", "cluster", "ok", "-n", "fine"},
		{"diagnose", "cluster", "ok", "-n", "fine", "--workload=false"},
		{"diagnose", "clusters", "-A", "--workload=false"},
	} {
		out, errOut, code = runCapctl(t, append(args, partial...)...)
		if code != multicluster.ExitIncomplete || !strings.Contains(out+errOut, "machines.cluster.x-k8s.io") || strings.Contains(errOut, "Error:") {
			t.Errorf("%v as a user who may not list Machines: exit %d (want %d):\n%s\n%s", args, code, multicluster.ExitIncomplete, out, errOut)
		}
	}
}
