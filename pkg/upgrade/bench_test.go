package upgrade

import (
	"context"
	"fmt"
	"testing"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// BenchmarkPlanProviders plans four providers against an in-memory catalog (the planning rules
// alone, without repository I/O).
func BenchmarkPlanProviders(b *testing.B) {
	cat := memCatalog{versions: map[string][]string{}, series: map[string]map[string][]Series{}}
	var items []inventory.Provider
	for _, p := range []struct {
		name string
		t    provider.Type
	}{{"cluster-api", provider.CoreProviderType}, {"kubeadm", provider.BootstrapProviderType}, {"kubeadm", provider.ControlPlaneProviderType}, {"docker", provider.InfrastructureProviderType}} {
		inv := inventory.New(p.name, p.t, "v1.13.4", "ns-"+p.name)
		items = append(items, inv)
		label := inv.ManifestLabel()
		cat.series[label] = map[string][]Series{}
		for minor := 10; minor <= 14; minor++ {
			for patch := 0; patch < 10; patch++ {
				v := fmt.Sprintf("v1.%d.%d", minor, patch)
				cat.versions[label] = append(cat.versions[label], v)
				cat.series[label][v] = capiSeries
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PlanProviders(context.Background(), cat, items); err != nil {
			b.Fatal(err)
		}
	}
}
