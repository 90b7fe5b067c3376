package inventory_test

import (
	"errors"
	"testing"

	"github.com/capctl/capctl/internal/testenv"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

func TestInventoryRoundTripOnRealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
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
	// An update is a patch of the same object.
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
	if items[2].Version != "v1.14.1" || items[2].ProviderName != "docker" || items[2].Type != provider.InfrastructureProviderType {
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
