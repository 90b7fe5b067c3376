package upgrade

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// repoConfig writes a clusterctl.yaml whose providers point at the local repository root (every
// provider's URL says latest) and returns a catalog reading it.
func repoCatalog(t testing.TB, root string, providers ...string) RepositoryCatalog {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("overridesFolder: " + filepath.Join(dir, "overrides") + "\n")
	b.WriteString("cert-manager:\n  url: " + filepath.Join(root, "cert-manager", "latest", "cert-manager-crds.yaml") + "\n  version: v1.21.1\n")
	b.WriteString("providers:\n")
	for _, label := range providers {
		typ, name, ok := provider.ParseManifestLabel(label)
		if !ok {
			t.Fatalf("bad label %s", label)
		}
		b.WriteString("- name: " + name + "\n  type: " + string(typ) + "\n  url: " + filepath.Join(root, label, "latest", typ.ComponentsFile()) + "\n")
	}
	p := filepath.Join(dir, "clusterctl.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(context.Background(), config.Options{Path: p, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := repository.New(cfg, repository.Options{CacheDir: "-", Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	return RepositoryCatalog{Client: rc}
}

var capiLabels = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker"}

func setInventory(t *testing.T, env *testenv.Env, items ...inventory.Provider) {
	t.Helper()
	ctx := context.Background()
	// Discovery may lag the inventory CRD being Established by a moment.
	var current []inventory.Provider
	err := cluster.Poll(ctx, 200*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		var err error
		current, err = inventory.List(ctx, env.Client)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the inventory is not readable: %v", err)
	}
	for _, p := range current {
		if err := inventory.Delete(ctx, env.Client, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range items {
		env.CreateNamespaces(t, p.Namespace)
		if err := inventory.Write(ctx, env.Client, p); err != nil {
			t.Fatal(err)
		}
	}
}

func capiInventory(version string) []inventory.Provider {
	return []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, version, "capi-system"),
		inventory.New("kubeadm", provider.BootstrapProviderType, version, "capi-kubeadm-bootstrap-system"),
		inventory.New("kubeadm", provider.ControlPlaneProviderType, version, "capi-kubeadm-control-plane-system"),
		inventory.New("docker", provider.InfrastructureProviderType, version, "capd-system"),
	}
}

func TestProviderPlanOnAPIServer(t *testing.T) {
	testenv.Integration(t)
	fixtures := filepath.Join(testenv.FixturesDir(t), "repository")
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	cat := repoCatalog(t, fixtures, capiLabels...)

	// An empty API server: no Cluster API, no inventory.
	if _, err := Plan(ctx, env.Client, cat); err == nil || !strings.Contains(err.Error(), "capctl init") {
		t.Errorf("no inventory: %v", err)
	}
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	// Cluster API's own CRDs, for the management-cluster contract check (v1beta2 stored).
	env.InstallCRDs(t, filepath.Join(testenv.FixturesDir(t), "crds", "cluster.x-k8s.io.yaml"))
	if _, err := Plan(ctx, env.Client, cat); err == nil || !strings.Contains(err.Error(), "capctl init") {
		t.Errorf("empty inventory: %v", err)
	}

	next := func(plan *ProviderPlan, contract string) map[string]string {
		for _, cp := range plan.Contracts {
			if cp.Contract == contract {
				out := map[string]string{}
				for _, p := range cp.Providers {
					out[p.Name] = p.NextVersion
				}
				return out
			}
		}
		t.Fatalf("no %s plan in %+v", contract, plan)
		return nil
	}

	t.Run("minor upgrade", func(t *testing.T) {
		setInventory(t, env, capiInventory("v1.13.4")...)
		plan, err := Plan(ctx, env.Client, cat)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Contracts) != 1 || !plan.Contracts[0].Applicable() || plan.ManagementGroup != "capi-system/cluster-api" {
			t.Fatalf("plan %+v", plan)
		}
		for name, v := range next(plan, "v1beta2") {
			if v != "v1.14.0" {
				t.Errorf("%s: next %q", name, v)
			}
		}
	})
	t.Run("up to date", func(t *testing.T) {
		setInventory(t, env, capiInventory("v1.14.0")...)
		plan, err := Plan(ctx, env.Client, cat)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Contracts) != 1 || !plan.Contracts[0].UpToDate() {
			t.Fatalf("plan %+v", plan)
		}
	})
	t.Run("patch upgrade within the series", func(t *testing.T) {
		// A repository that stops at v1.13.5: the newest patch is the plan.
		root := t.TempDir()
		for _, label := range capiLabels[:1] {
			for _, v := range []string{"v1.13.4", "v1.13.5"} {
				src := filepath.Join(fixtures, label, v, "metadata.yaml")
				data, err := os.ReadFile(src)
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(root, label, v, "metadata.yaml")
				_ = os.MkdirAll(filepath.Dir(dst), 0o755)
				if err := os.WriteFile(dst, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		setInventory(t, env, capiInventory("v1.13.4")[0])
		plan, err := Plan(ctx, env.Client, repoCatalog(t, root, "cluster-api"))
		if err != nil {
			t.Fatal(err)
		}
		if got := next(plan, "v1beta2")["cluster-api"]; got != "v1.13.5" {
			t.Errorf("next %q, want v1.13.5", got)
		}
	})
	t.Run("from the v1beta1 contract", func(t *testing.T) {
		setInventory(t, env, capiInventory("v1.10.10")...)
		plan, err := Plan(ctx, env.Client, cat)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Contracts) != 2 {
			t.Fatalf("plan %+v", plan)
		}
		v1 := plan.Contracts[0]
		if v1.Contract != "v1beta1" || !v1.Current || !v1.UpToDate() {
			t.Errorf("v1beta1 plan %+v", v1)
		}
		v2 := plan.Contracts[1]
		// Core and kubeadm move at most 3 minors at once; docker is not held back.
		got := next(plan, "v1beta2")
		if v2.Contract != "v1beta2" || !v2.Applicable() || got["control-plane-kubeadm"] != "v1.13.5" || got["cluster-api"] != "v1.13.5" || got["infrastructure-docker"] != "v1.14.0" {
			t.Errorf("v1beta2 plan %+v", v2)
		}
	})
	t.Run("contract boundary", func(t *testing.T) {
		root, _ := filepath.Abs("testdata/repository")
		setInventory(t, env,
			inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
			inventory.New("foo", provider.InfrastructureProviderType, "v0.1.0", "foo-system"))
		plan, err := Plan(ctx, env.Client, repoCatalog(t, root, "cluster-api", "infrastructure-foo"))
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Contracts) != 2 {
			t.Fatalf("plan %+v", plan)
		}
		// The pre-release and the tag without a release are skipped, not fatal.
		if got := next(plan, "v1beta2"); got["infrastructure-foo"] != "v0.2.0" || got["cluster-api"] != "" || !plan.Contracts[0].Applicable() {
			t.Errorf("v1beta2 plan %+v", plan.Contracts[0])
		}
		v3 := plan.Contracts[1]
		if v3.Contract != "v1beta3" || v3.BlockedNames() != "foo-system/infrastructure-foo" || v3.Applicable() || v3.Supported {
			t.Errorf("v1beta3 plan %+v", v3)
		}
	})
	// Last: it leaves an old-contract Cluster CRD behind.
	t.Run("old management cluster contract", func(t *testing.T) {
		// The v1beta2 Cluster CRD goes first: an update cannot drop a stored version.
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "clusters.cluster.x-k8s.io"}}
		if err := env.Client.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
		if err := cluster.Poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Fatalf("the v1beta2 Cluster CRD was not deleted: %v", err)
		}
		env.InstallCRDs(t, "testdata/old-cluster-crd.yaml")
		if _, err := Plan(ctx, env.Client, cat); err == nil || !strings.Contains(err.Error(), "stores Clusters as v1alpha4") {
			t.Errorf("err = %v", err)
		}
	})
}
