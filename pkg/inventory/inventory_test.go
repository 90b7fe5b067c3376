package inventory_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

func TestInventoryRoundTripOnRealAPIServer(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "capi-system", "capi-kubeadm-bootstrap-system", "capd-system")

	if _, err := inventory.List(ctx, c); !errors.Is(err, inventory.ErrNoInventory) {
		t.Fatalf("before init: want ErrNoInventory, got %v", err)
	}
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := inventory.EnsureCRD(ctx, c); err != nil { // idempotent
		t.Fatal(err)
	}
	for _, p := range []inventory.Provider{
		inventory.New("docker", provider.InfrastructureProviderType, "v1.14.0", "capd-system"),
		inventory.New("cluster-api", provider.CoreProviderType, "v1.14.0", "capi-system"),
		inventory.New("kubeadm", provider.BootstrapProviderType, "v1.14.0", "capi-kubeadm-bootstrap-system"),
	} {
		if err := inventory.Write(ctx, c, p); err != nil {
			t.Fatal(err)
		}
	}
	// An update is a patch of the same object. Installed from an OCI artifact, the entry names
	// it by digest; installed again from another repository, the stale record goes.
	fromOCI := inventory.New("docker", provider.InfrastructureProviderType, "v1.14.1", "capd-system")
	fromOCI.Artifact = "registry.example/capi/manifests/infrastructure-docker@sha256:" + strings.Repeat("a", 64)
	if err := inventory.Write(ctx, c, fromOCI); err != nil {
		t.Fatal(err)
	}
	if items, err := inventory.List(ctx, c); err != nil || items[2].Artifact != fromOCI.Artifact {
		t.Fatalf("artifact not recorded: %+v %v", items, err)
	}
	if err := inventory.Write(ctx, c, inventory.New("docker", provider.InfrastructureProviderType, "v1.14.1", "capd-system")); err != nil {
		t.Fatal(err)
	}
	items, err := inventory.List(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 3 {
		t.Fatalf("got %d items: %+v", len(items), items)
	}
	if items[0].Name != "cluster-api" || items[1].Name != "bootstrap-kubeadm" || items[2].Name != "infrastructure-docker" {
		t.Errorf("order/naming: %+v", items)
	}
	if items[2].Version != "v1.14.1" || items[2].ProviderName != "docker" || items[2].Type != provider.InfrastructureProviderType || items[2].Artifact != "" {
		t.Errorf("docker entry: %+v", items[2])
	}
	if got := inventory.DefaultProviderName(items, provider.InfrastructureProviderType); got != "docker" {
		t.Errorf("default infrastructure provider = %q", got)
	}
	if err := inventory.Delete(ctx, c, items[2]); err != nil {
		t.Fatal(err)
	}
	items, _ = inventory.List(ctx, c)
	if len(items) != 2 {
		t.Errorf("after delete: %+v", items)
	}
}

// TestInventoryCRDLabelsAreClusterctls: the inventory CRD carries exactly clusterctl's label
// (clusterctl.cluster.x-k8s.io/core: inventory). The clusterctl.cluster.x-k8s.io label is how
// clusterctl move picks the kinds it carries, so it must not be there; a CRD an older capctl
// labelled so is repaired.
func TestInventoryCRDLabelsAreClusterctls(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	labels := func() map[string]string {
		t.Helper()
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: inventory.CRDName}, crd); err != nil {
			t.Fatal(err)
		}
		return crd.Labels
	}
	want := map[string]string{inventory.CoreLabel: inventory.CoreInventoryValue}
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	if got := labels(); !reflect.DeepEqual(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	// As an older capctl left it.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: inventory.CRDName}, crd); err != nil {
		t.Fatal(err)
	}
	crd.Labels[inventory.ClusterctlLabel] = ""
	if err := env.Client.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	if got := labels(); !reflect.DeepEqual(got, want) {
		t.Errorf("after repair: labels %v, want %v", got, want)
	}
}
