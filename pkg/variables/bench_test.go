package variables

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// BenchmarkProcessClusterClass substitutes the largest fixture template (the quick-start
// ClusterClass of infrastructure-docker v1.14.0); throughput is reported in MB/s.
func BenchmarkProcessClusterClass(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(testenv.FixturesDir(b), "repository", "infrastructure-docker", "v1.14.0", "clusterclass-quick-start.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	lookup := FromMap(map[string]string{"CLUSTER_NAME": "c", "NAMESPACE": "n"})
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Process(raw, lookup); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListClusterClass lists the variables of the same file.
func BenchmarkListClusterClass(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(testenv.FixturesDir(b), "repository", "infrastructure-docker", "v1.14.0", "clusterclass-quick-start.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := List(raw); err != nil {
			b.Fatal(err)
		}
	}
}
