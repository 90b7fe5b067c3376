// Package v1beta1set gives the conversion tests their v1beta1 inputs: the fixtures' CAPD
// v1.10.10 (v1beta1) templates, rendered with variables.
package v1beta1set

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/variables"
)

// Templates are the CAPD v1.10.10 templates of the fixtures the conversion tests read.
var Templates = []string{
	"clusterclass-quick-start.yaml", "clusterclass-in-memory.yaml",
	"cluster-template-development.yaml", "cluster-template-development-mp.yaml", "cluster-template-in-memory.yaml",
}

// Render renders one of Templates with a cluster's variables.
func Render(t *testing.T, name string) []byte {
	t.Helper()
	dir := filepath.Join(testenv.FixturesDir(t), "repository", "infrastructure-docker", "v1.10.10")
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	out, err := variables.Process(data, variables.FromMap(map[string]string{
		"CLUSTER_NAME": "c1", "NAMESPACE": "fleet", "KUBERNETES_VERSION": "v1.33.1",
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "2",
	}))
	if err != nil {
		t.Fatalf("rendering %s: %v", name, err)
	}
	return out
}
