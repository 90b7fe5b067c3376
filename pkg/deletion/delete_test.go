package deletion

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// installFixture creates the objects of a multi-document YAML file in file order.
func installFixture(t *testing.T, c client.Client, path string) { testenv.CreateFromFile(t, c, path) }

// createWhenServed retries a create until the kind's CRD is served.
func createWhenServed(t *testing.T, c client.Client, u *unstructured.Unstructured) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(context.Background(), u.DeepCopy())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func cr(apiVersion, kind, ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

func exists(t *testing.T, c client.Client, obj client.Object, ns, name string) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return obj.GetDeletionTimestamp() == nil
}

func names(objs []Object) string {
	var s []string
	for _, o := range objs {
		s = append(s, o.String())
	}
	return strings.Join(s, "\n")
}

// SetupProviders installs the fixture components and their inventory into a fresh server.
func setupProviders(t *testing.T) *cluster.Client { return setupProvidersEnv(t).Client }

// setupProvidersEnv is setupProviders returning the server (to add users to it).
func setupProvidersEnv(t *testing.T) *testenv.Env {
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	ctx := context.Background()
	installFixture(t, c, "testdata/components.yaml")
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		t.Fatal(err)
	}
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"),
	} {
		if err := inventory.Write(ctx, c, p); err != nil {
			t.Fatal(err)
		}
	}
	dockerLabels := map[string]string{inventory.ClusterctlLabel: "", inventory.ProviderLabel: "infrastructure-docker"}
	createWhenServed(t, c, cr("cert-manager.io/v1", "Issuer", "capd-system", "capd-selfsigned-issuer", dockerLabels))
	createWhenServed(t, c, cr("cert-manager.io/v1", "Issuer", "default", "users-issuer", nil))
	createWhenServed(t, c, cr("infrastructure.cluster.x-k8s.io/v1beta2", "DockerCluster", "default", "workload", nil))
	return env
}

func TestDeleteAgainstAPIServer(t *testing.T) {
	testenv.Integration(t)
	c := setupProviders(t)
	ctx := context.Background()
	docker := Request{Providers: []Selection{{Type: provider.InfrastructureProviderType, Name: "docker"}}}

	// The plan for the docker provider alone, with the default keep rules.
	plan, err := buildPlan(ctx, c, docker)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Providers) != 1 || len(plan.Warnings) != 0 {
		t.Fatalf("plan: %+v", plan)
	}
	got := names(plan.Providers[0].Delete)
	want := strings.Join([]string{
		"ValidatingWebhookConfiguration/capd-validating-webhook-configuration",
		"Deployment/capd-system/capd-controller-manager",
		"Issuer/capd-system/capd-selfsigned-issuer",
		"Service/capd-system/capd-webhook-service",
		"ClusterRole/capd-manager-role",
		"ClusterRoleBinding/capd-manager-rolebinding",
	}, "\n")
	if got != want {
		t.Fatalf("docker plan deletes:\n%s\nwant:\n%s", got, want)
	}
	if pp := plan.Providers[0]; pp.NamespaceDeleted || strings.Join(pp.KeptCRDs, ",") != "dockerclusters.infrastructure.cluster.x-k8s.io" {
		t.Fatalf("keeps: %+v", pp)
	}
	if plan.CertManager.Deleted || len(plan.Remaining) != 1 {
		t.Fatalf("cert-manager/remaining: %+v", plan)
	}

	// --include-crd refuses while a DockerCluster exists, naming the kind and count.
	_, err = buildPlan(ctx, c, Request{Providers: docker.Providers, IncludeCRD: true})
	var eo *ExistingObjectsError
	if !errors.As(err, &eo) || !strings.Contains(err.Error(), `"infrastructure-docker": [DockerCluster: 1]`) {
		t.Fatalf("want ExistingObjectsError, got %v", err)
	}
	// --include-cert-manager refuses while the core provider stays.
	_, err = buildPlan(ctx, c, Request{Providers: docker.Providers, IncludeCertManager: true})
	if err == nil || !strings.Contains(err.Error(), "still needed by providers that stay installed (capi-system/cluster-api)") {
		t.Fatalf("cert-manager still needed: got %v", err)
	}

	// Remove the DockerCluster; now --include-crd goes ahead.
	if err := c.Delete(ctx, cr("infrastructure.cluster.x-k8s.io/v1beta2", "DockerCluster", "default", "workload", nil)); err != nil {
		t.Fatal(err)
	}
	plan, err = buildPlan(ctx, c, Request{Providers: docker.Providers, IncludeCRD: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(names(plan.Providers[0].Delete), "CustomResourceDefinition/dockerclusters.infrastructure.cluster.x-k8s.io") {
		t.Fatalf("CRD not planned: %s", names(plan.Providers[0].Delete))
	}
	var progressed int
	res, err := apply(ctx, c, plan, 4, func(done, total int, o Object, err error) { progressed = done })
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 7 || progressed != 7 || len(res.InventoryRemoved) != 1 {
		t.Fatalf("result %+v, progress %d", res, progressed)
	}
	if exists(t, c, &appsv1.Deployment{}, "capd-system", "capd-controller-manager") ||
		exists(t, c, &rbacv1.ClusterRole{}, "", "capd-manager-role") ||
		exists(t, c, &apiextensionsv1.CustomResourceDefinition{}, "", "dockerclusters.infrastructure.cluster.x-k8s.io") {
		t.Fatal("docker components survived")
	}
	if !exists(t, c, &corev1.Namespace{}, "", "capd-system") || !exists(t, c, &corev1.Secret{}, "capd-system", "user-credentials") ||
		!exists(t, c, &corev1.ConfigMap{}, "default", "lookalike") || !exists(t, c, &appsv1.Deployment{}, "capi-system", "capi-controller-manager") {
		t.Fatal("objects that must stay were deleted")
	}
	items, err := inventory.List(ctx, c)
	if err != nil || len(items) != 1 || items[0].ProviderName != "cluster-api" {
		t.Fatalf("inventory after delete: %+v %v", items, err)
	}

	// Deleting docker again: it is no longer installed.
	if _, err := buildPlan(ctx, c, docker); err == nil || !strings.Contains(err.Error(), "is not installed (installed: cluster-api") {
		t.Fatalf("re-delete: %v", err)
	}

	// Everything, with namespaces and cert-manager: refused while a user's Issuer exists.
	all := Request{All: true, IncludeNamespace: true, IncludeCertManager: true}
	if _, err := buildPlan(ctx, c, all); err == nil || !strings.Contains(err.Error(), "Issuer/default/users-issuer") {
		t.Fatalf("cert-manager in use: %v", err)
	}
	if err := c.Delete(ctx, cr("cert-manager.io/v1", "Issuer", "default", "users-issuer", nil)); err != nil {
		t.Fatal(err)
	}
	plan, err = buildPlan(ctx, c, all)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(plan.Providers[0].Delete), "ClusterRole/capi-manager-role\nNamespace/capi-system"; got != want {
		t.Fatalf("core plan:\n%s\nwant:\n%s", got, want)
	}
	if got, want := names(plan.CertManager.Delete), "ClusterRole/cert-manager-controller-issuers\nCustomResourceDefinition/issuers.cert-manager.io\nNamespace/cert-manager"; !plan.CertManager.Deleted || got != want {
		t.Fatalf("cert-manager plan:\n%s\nwant:\n%s", got, want)
	}
	if _, err := apply(ctx, c, plan, 0, nil); err != nil {
		t.Fatal(err)
	}
	if exists(t, c, &corev1.Namespace{}, "", "capi-system") || exists(t, c, &corev1.Namespace{}, "", "cert-manager") ||
		exists(t, c, &apiextensionsv1.CustomResourceDefinition{}, "", "issuers.cert-manager.io") {
		t.Fatal("namespaces or cert-manager CRD survived")
	}
	if !exists(t, c, &apiextensionsv1.CustomResourceDefinition{}, "", "clusters.cluster.x-k8s.io") ||
		!exists(t, c, &apiextensionsv1.CustomResourceDefinition{}, "", inventory.CRDName) {
		t.Fatal("the core CRD (no --include-crd) or the inventory CRD was deleted")
	}
	if items, err := inventory.List(ctx, c); err != nil || len(items) != 0 {
		t.Fatalf("inventory not empty: %+v %v", items, err)
	}
}

func TestResolve(t *testing.T) {
	items := []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("helm", provider.AddonProviderType, "v0.3.0", "team-a"),
		inventory.New("helm", provider.AddonProviderType, "v0.3.0", "team-b"),
	}
	if _, err := resolve(items, Request{Providers: []Selection{{Type: provider.AddonProviderType, Name: "helm"}}}); err == nil || !strings.Contains(err.Error(), "failed to identify the namespace") {
		t.Errorf("ambiguous: %v", err)
	}
	got, err := resolve(items, Request{Providers: []Selection{{Type: provider.AddonProviderType, Name: "helm", Namespace: "team-b"}}})
	if err != nil || len(got) != 1 || got[0].Namespace != "team-b" {
		t.Errorf("with namespace: %+v %v", got, err)
	}
	if _, err := resolve(items, Request{Providers: []Selection{{Type: provider.CoreProviderType, Name: "cluster-api", Version: "v1.13.0"}}}); err == nil || !strings.Contains(err.Error(), "installed at version v1.14.0") {
		t.Errorf("version: %v", err)
	}
	if _, err := resolve(nil, Request{All: true}); err == nil {
		t.Error("empty inventory accepted")
	}
	if err := (Request{}).Validate(); err == nil || !strings.Contains(err.Error(), "should be specified or the --all flag") {
		t.Errorf("nothing selected: %v", err)
	}
	if err := (Request{All: true, Providers: []Selection{{Type: provider.CoreProviderType, Name: "cluster-api"}}}).Validate(); err == nil {
		t.Error("--all with a provider accepted")
	}
}

// BenchmarkBuildPlan measures planning the deletion of every provider of a small installation
// (discovery, the CRD list and one metadata LIST per API type), reporting API requests per plan.
func BenchmarkBuildPlan(b *testing.B) {
	env := testenv.Start(b, testenv.Options{})
	c := env.Client
	ctx := context.Background()
	testenv.CreateFromFile(b, c, "testdata/components.yaml")
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		b.Fatal(err)
	}
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"),
	} {
		if err := inventory.Write(ctx, c, p); err != nil {
			b.Fatal(err)
		}
	}
	opts := Request{All: true, IncludeCRD: true, IncludeNamespace: true}
	if _, err := buildPlan(ctx, c, opts); err != nil { // warm up discovery and CRD storage
		b.Fatal(err)
	}
	b.ResetTimer()
	var requests int64
	var types int
	for i := 0; i < b.N; i++ {
		// A fresh client per plan, as each capctl run has: discovery is paid every time.
		fresh, err := cluster.New(cluster.Options{Kubeconfig: env.Kubeconfig})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := buildPlan(ctx, fresh, opts)
		if err != nil {
			b.Fatal(err)
		}
		requests += fresh.Requests()
		types = plan.ListedTypes
	}
	b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
	b.ReportMetric(float64(types), "types-listed")
}

// TestDeleteAllRemovesCoreLast: `delete --all` killed after its first provider must leave an
// inventory that still lists the core provider (clusterctl refuses a management cluster whose
// inventory lacks it). The run is stopped, as a kill would, right after the first object of the
// second provider is deleted.
func TestDeleteAllRemovesCoreLast(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
	c := setupProviders(t)
	if err := c.Delete(context.Background(), cr("infrastructure.cluster.x-k8s.io/v1beta2", "DockerCluster", "default", "workload", nil)); err != nil {
		t.Fatal(err)
	}
	plan, err := buildPlan(context.Background(), c, Request{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(plan.Providers); n != 2 || plan.Providers[n-1].Provider.Type != provider.CoreProviderType {
		t.Fatalf("plan order: %+v, want the core provider last", plan.Providers)
	}
	owner := map[string]string{}
	for _, pp := range plan.Providers {
		for _, o := range pp.Delete {
			owner[o.String()] = pp.Provider.ManifestLabel()
		}
	}
	ctx, kill := context.WithCancel(context.Background())
	defer kill()
	first := ""
	_, err = apply(ctx, c, plan, 1, func(_, _ int, o Object, _ error) {
		if first == "" {
			first = owner[o.String()]
		} else if owner[o.String()] != first {
			kill()
		}
	})
	if err == nil {
		t.Fatal("the stopped delete reported success")
	}
	items, err := inventory.List(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	core := false
	for _, p := range items {
		core = core || p.Type == provider.CoreProviderType
	}
	if len(items) > 0 && !core {
		t.Fatalf("a killed delete left providers without the core provider in the inventory: %+v (first deleted: %s)", items, first)
	}
	if len(items) != 1 || !core {
		t.Errorf("inventory after the first provider: %+v, want the core provider alone", items)
	}
}
