package convert

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/repository"
)

// TestAgreesWithClusterctlConvert runs the reference clusterctl v1.14.2's convert
// ($CAPCTL_CLUSTERCTL) on the classic set. For the objects it converts (the cluster.x-k8s.io
// kinds), every non-zero value it writes is in capctl's output at the same path with the same
// value (the same upstream conversion); capctl also keeps the references clusterctl drops.
func TestAgreesWithClusterctlConvert(t *testing.T) {
	bin := testenv.Clusterctl(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "clusterctl.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join("testdata", "classic-v1beta1.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "convert", in, "--to-version", "v1beta2", "--config", cfg)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "CLUSTERCTL_DISABLE_VERSIONCHECK=true")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("clusterctl convert: %v\n%s", err, stderr.String())
	}
	t.Logf("clusterctl: %s", strings.TrimSpace(stderr.String()))

	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	ours := ConvertText(in, data)
	byName := func(text []byte) map[string]map[string]any {
		m := map[string]map[string]any{}
		for _, d := range repository.SplitDocuments(text) {
			raw, err := sigsyaml.YAMLToJSON(d.Text)
			if err != nil {
				t.Fatal(err)
			}
			o, err := decodeJSON(raw)
			if err != nil {
				continue
			}
			m[gvkOf(o).Kind+"/"+gvkOf(o).Version] = o
		}
		return m
	}
	theirs, mine := byName(out), byName(ours.Output)
	compared := 0
	for key, obj := range theirs {
		if !strings.HasSuffix(key, "/v1beta2") {
			continue
		}
		compared++
		// Values clusterctl writes that capctl does not: every one must be a zero value.
		for _, l := range conversion.Lost(obj, mine[key]) {
			t.Errorf("%s: clusterctl writes %s", key, l)
		}
	}
	if compared < 3 {
		t.Errorf("clusterctl converted %d objects, expected at least Cluster, MachineDeployment, MachineHealthCheck", compared)
	}
	if _, ok := nestedMap(theirs["Cluster/v1beta2"], path("spec.controlPlaneRef")); ok {
		t.Log("clusterctl now keeps controlPlaneRef")
	}
	if _, ok := nestedMap(mine["Cluster/v1beta2"], path("spec.controlPlaneRef")); !ok {
		t.Error("capctl dropped controlPlaneRef")
	}
}
