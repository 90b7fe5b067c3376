package repository

import (
	"context"
	"testing"

	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/variables"
)

// BenchmarkComponentsDocker measures clusterctl's processing pipeline on the real CAPD v1.14.0
// components (5,900 lines, 24 objects) once the file is in memory.
func BenchmarkComponentsDocker(b *testing.B) {
	cfg := fixtureConfig(b, "")
	c := newTestClient(b, cfg, Options{Offline: true})
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	ctx := context.Background()
	lookup := variables.FromMap(nil)
	if _, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.14.0", Lookup: lookup}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		comp, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.14.0", Lookup: lookup})
		if err != nil || len(comp.Objects) == 0 {
			b.Fatal(err)
		}
	}
}
