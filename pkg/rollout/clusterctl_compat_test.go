package rollout

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestClusterctlAgrees runs the reference clusterctl v1.14.2 ($CAPCTL_CLUSTERCTL) and capctl on
// the same objects, one after the other: each sees the other's pause, refuses with the same
// words, and undoes the other's change.
func TestClusterctlAgrees(t *testing.T) {
	testenv.Integration(t)
	bin := testenv.Clusterctl(t)
	fixtures := testenv.FixturesDir(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{
		filepath.Join(fixtures, "crds", "cluster.x-k8s.io.yaml"),
		filepath.Join(fixtures, "crds", "controlplane.cluster.x-k8s.io.yaml"),
		filepath.Join("testdata", "example-controlplanes-crd.yaml"),
	}})
	env.CreateNamespaces(t, "team-a")
	testenv.CreateFromFile(t, env.Client, filepath.Join("testdata", "objects.yaml"))
	f := fixture{env: env, ctx: testenv.Context(t)}
	home := t.TempDir()
	cfg := filepath.Join(home, "clusterctl.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clusterctl := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(append([]string{"alpha", "rollout"}, args...), "-n", "team-a", "--kubeconfig", env.Kubeconfig, "--config", cfg)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "CLUSTERCTL_DISABLE_VERSIONCHECK=true")
		out, err := cmd.CombinedOutput()
		t.Logf("clusterctl alpha rollout %s: %v\n%s", strings.Join(args, " "), err, out)
		return string(out), err
	}
	same := func(clusterctlOut string, capctlErr error, msg string) {
		t.Helper()
		if !strings.Contains(clusterctlOut, msg) || capctlErr == nil || !strings.Contains(capctlErr.Error(), msg) {
			t.Errorf("want both to say %q\nclusterctl: %s\ncapctl: %v", msg, clusterctlOut, capctlErr)
		}
	}

	// MachineDeployment: capctl pauses, clusterctl sees it; clusterctl resumes, capctl sees it.
	if _, err := f.run(t, Request{Action: Pause, Resources: []string{"machinedeployment/prod-1-md-0"}}); err != nil {
		t.Fatal(err)
	}
	out, _ := clusterctl("pause", "machinedeployment/prod-1-md-0")
	_, err := f.run(t, Request{Action: Pause, Resources: []string{"machinedeployment/prod-1-md-0"}})
	same(out, err, "MachineDeployment is already paused: machinedeployment/prod-1-md-0")
	out, _ = clusterctl("restart", "machinedeployment/prod-1-md-0")
	_, err = f.run(t, Request{Action: Restart, Resources: []string{"machinedeployment/prod-1-md-0"}})
	same(out, err, "can't restart paused MachineDeployment (run rollout resume first): machinedeployment/prod-1-md-0")
	if _, err := clusterctl("resume", "machinedeployment/prod-1-md-0"); err != nil {
		t.Fatal(err)
	}
	out, _ = clusterctl("resume", "machinedeployment/prod-1-md-0")
	_, err = f.run(t, Request{Action: Resume, Resources: []string{"machinedeployment/prod-1-md-0"}})
	same(out, err, "MachineDeployment is not currently paused: machinedeployment/prod-1-md-0")

	// KubeadmControlPlane: clusterctl pauses (annotation), capctl refuses to restart and resumes.
	if _, err := clusterctl("pause", "kubeadmcontrolplane/prod-1-control-plane"); err != nil {
		t.Fatal(err)
	}
	out, _ = clusterctl("restart", "kubeadmcontrolplane/prod-1-control-plane")
	_, err = f.run(t, Request{Action: Restart, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
	same(out, err, "can't restart paused KubeadmControlPlane (remove annotation 'cluster.x-k8s.io/paused' first): kubeadmcontrolplane/prod-1-control-plane")
	if _, err := f.run(t, Request{Action: Resume, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}}); err != nil {
		t.Fatal(err)
	}
	out, _ = clusterctl("resume", "kubeadmcontrolplane/prod-1-control-plane")
	_, err = f.run(t, Request{Action: Resume, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
	same(out, err, "KubeadmControlPlane is not currently paused: kubeadmcontrolplane/prod-1-control-plane")

	// A restart by either writes the same field in the same form.
	if _, err := clusterctl("restart", "kubeadmcontrolplane/prod-1-control-plane"); err != nil {
		t.Fatal(err)
	}
	byClusterctl, _, _ := unstructured.NestedString(f.get(t, "KubeadmControlPlane", "prod-1-control-plane").Object, "spec", "rollout", "after")
	if _, err := f.run(t, Request{Action: Restart, Resources: []string{"machinedeployment/prod-2-md-0"}}); err != nil {
		t.Fatal(err)
	}
	byCapctl, _, _ := unstructured.NestedString(f.get(t, "MachineDeployment", "prod-2-md-0").Object, "spec", "rollout", "after")
	for _, s := range []string{byClusterctl, byCapctl} {
		if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") && !strings.Contains(s, "+") {
			t.Errorf("rollout.after %q is not RFC 3339", s)
		}
	}

	out, _ = clusterctl("restart", "deployment/x")
	_, err = f.run(t, Request{Action: Restart, Resources: []string{"deployment/x"}})
	if !strings.Contains(out, "Invalid resource type") || err == nil || !strings.Contains(err.Error(), "Invalid resource type") {
		t.Errorf("invalid type: clusterctl %q, capctl %v", out, err)
	}
}
