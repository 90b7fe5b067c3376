package initialize_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testenv"
	initialize "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
)

// TestClusterctlReadsCapctlInit checks the compatibility requirement with the real clusterctl: a
// management cluster initialised by capctl is read by `clusterctl upgrade plan` and
// `clusterctl describe cluster`. It needs a clusterctl binary (v1.14.x) named by $CAPCTL_CLUSTERCTL
// (see docs: build it from the Go module proxy with a wrapper module) and skips without one.
func TestClusterctlReadsCapctlInit(t *testing.T) {
	bin := os.Getenv("CAPCTL_CLUSTERCTL")
	if bin == "" {
		t.Skip("set CAPCTL_CLUSTERCTL to a clusterctl v1.14 binary to run this compatibility test")
	}
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	_, err := initialize.Init(ctx, clients(t, cfgPath, env.Config), initialize.Options{
		Validate: true,
		Selection: initialize.Selection{Core: "cluster-api:v1.13.5", Bootstrap: []string{"kubeadm:v1.13.5"},
			ControlPlane: []string{"kubeadm:v1.13.5"}, Infrastructure: []string{"docker:v1.13.5"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(cctx, bin, append(args, "--kubeconfig", env.Kubeconfig, "--config", cfgPath)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "CLUSTERCTL_DISABLE_VERSIONCHECK=true", "GOPROXY=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("clusterctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("clusterctl %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}

	plan := run("upgrade", "plan")
	for _, want := range []string{"Cert-Manager is already up to date", "cluster-api", "capi-system", "CoreProvider", "v1.13.5", "v1.14.0", "clusterctl upgrade apply --contract v1beta2"} {
		if !strings.Contains(plan, want) {
			t.Errorf("upgrade plan lacks %q", want)
		}
	}

	// describe needs a Cluster; no webhook pod runs here, so drop the webhook configurations first.
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("admissionregistration.k8s.io/v1")
		u.SetKind(kind)
		if err := env.Client.DeleteAllOf(ctx, u, client.HasLabels{inventory.ClusterctlLabel}); err != nil {
			t.Fatal(err)
		}
	}
	cl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "demo", "namespace": "default"},
		"spec":     map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "cluster.local"}},
	}}
	if err := env.Client.Create(ctx, cl); err != nil {
		t.Fatal(err)
	}
	tree := run("describe", "cluster", "demo", "-n", "default")
	if !strings.Contains(tree, "Cluster/demo") {
		t.Errorf("describe did not show the cluster:\n%s", tree)
	}
}
