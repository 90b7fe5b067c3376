package convert

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/pkg/conversion"
	capenv "github.com/capctl/capctl/pkg/env"
)

// TestConvertLargeObjectMemory: converting one very large object allocates a bounded multiple of
// its size (docs/benchmarks.md, "Very large objects"): a ConfigMap passed through byte for byte
// and a v1beta1 Cluster with a huge annotation, converted.
func TestConvertLargeObjectMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads tens of MiB")
	}
	n := testenv.LargeInputSize(t)
	cluster := []byte("apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata:\n  name: big\n  namespace: a\n  annotations:\n    example.com/blob: " +
		userinputtest.LargeAnnotationValue(n) + "\nspec:\n  paused: false\n")
	for _, tc := range []struct {
		name  string
		in    []byte
		bound float64 // allocated ÷ input size; before: 26× and 55×
		want  string
	}{
		{"ConfigMap passed through", userinputtest.LargeConfigMap("a", "big", n), 20, conversion.NotCAPI},
		{"Cluster with a huge annotation", cluster, 52, conversion.Converted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "big.yaml")
			if err := os.WriteFile(p, tc.in, 0o600); err != nil {
				t.Fatal(err)
			}
			var rep *Report
			var err error
			m := testenv.LeastMemory(3, func() { rep, err = Run(context.Background(), capenv.Env{}, Request{Paths: []string{p}}) })
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Files[0].Objects[0].Action; got != tc.want {
				t.Fatalf("action %q, want %q", got, tc.want)
			}
			testenv.CheckMemory(t, m, len(tc.in), tc.bound)
		})
	}
}
