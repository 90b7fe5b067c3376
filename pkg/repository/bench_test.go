package repository

import (
	"context"
	"os"
	"path/filepath"
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

// BenchmarkCachedComponentsRead measures reading the cached core components (1.1 MiB) in a new
// run, trusted through its SHA-256 sidecar.
func BenchmarkCachedComponentsRead(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(fixtureRepo(b), "cluster-api", "v1.14.0", "core-components.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	dc := &diskCache{dir: b.TempDir()}
	const key, version, file = "github/kubernetes-sigs/cluster-api", "v1.14.0", "core-components.yaml"
	if err := dc.putFile(key, version, file, data); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, _, bad, ok := dc.getFile(key, version, file); !ok || bad != nil {
			b.Fatal(bad)
		}
	}
}
