package clusterinit_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
)

// TestClusterctlReadsCapctlInit checks the compatibility requirement with the real clusterctl: a
// management cluster initialised by capctl is read by `clusterctl upgrade plan` and
// `clusterctl describe cluster`. It needs a clusterctl binary (v1.14.x) named by $CAPCTL_CLUSTERCTL
// (see docs: build it from the Go module proxy with a wrapper module) and skips without one.
func TestClusterctlReadsCapctlInit(t *testing.T) {
	bin := needClusterctl(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, env.Config), clusterinit.InitRequest{
		StrictChecks: true,
		Selection: clusterinit.Selection{Core: "cluster-api:v1.13.5", Bootstrap: []string{"kubeadm:v1.13.5"},
			ControlPlane: []string{"kubeadm:v1.13.5"}, Infrastructure: []string{"docker:v1.13.5"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		return runClusterctl(t, ctx, bin, home, env.Kubeconfig, cfgPath, args...)
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
	if !strings.Contains(tree, "Cluster default/demo") {
		t.Errorf("describe did not show the cluster:\n%s", tree)
	}
}

// needClusterctl returns the reference clusterctl named by $CAPCTL_CLUSTERCTL, skipping the test
// without it or under -short.
func needClusterctl(t *testing.T) string {
	t.Helper()
	testenv.Integration(t)
	bin := testenv.Clusterctl(t)
	return bin
}

func runClusterctl(t *testing.T, ctx context.Context, bin, home, kubeconfig, cfgPath string, args ...string) string {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, append(args, "--kubeconfig", kubeconfig, "--config", cfgPath)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "CLUSTERCTL_DISABLE_VERSIONCHECK=true", "GOPROXY=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("clusterctl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("clusterctl %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

// TestCapctlReadsClusterctlInit is the other direction: a management cluster initialised by
// clusterctl is recognised by capctl init (an identical init is a no-op) and extended by it.
func TestCapctlReadsClusterctlInit(t *testing.T) {
	bin := needClusterctl(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	// The namespace controller's part: clusterctl's probe deletes cert-manager-test.
	ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
	defer ctl.Stop()
	runClusterctl(t, ctx, bin, t.TempDir(), env.Kubeconfig, cfgPath, "init", "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0")
	sel := clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"}, ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}}
	res, err := clusterinit.InitWith(ctx, clients(t, cfgPath, env.Config), clusterinit.InitRequest{StrictChecks: true, Selection: sel})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoOp || res.FirstRun {
		t.Errorf("capctl did not recognise clusterctl's providers: %+v", res)
	}
	res, err = clusterinit.InitWith(ctx, clients(t, cfgPath, env.Config), clusterinit.InitRequest{StrictChecks: true, Selection: clusterinit.Selection{Infrastructure: []string{"tiny:v0.1.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.NoOp || len(res.Providers) != 1 || res.Providers[0].Action != clusterinit.ActionInstalled {
		t.Errorf("%+v", res)
	}
	items, err := inventory.List(ctx, env.Client)
	if err != nil || len(items) != 5 {
		t.Errorf("inventory %v %v", items, err)
	}
}
