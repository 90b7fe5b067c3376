package move

import (
	"context"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/userinputtest"
)

// TestBackupLargeObjectMemory: writing one very large object into a backup (`move
// --to-directory`) and reading it back (`--from-directory`) allocate a bounded multiple of its
// size (docs/benchmarks.md, "Very large objects").
func TestBackupLargeObjectMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads tens of MiB")
	}
	n := testenv.LargeInputSize(t)
	ref := Ref{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "big", UID: types.UID("u-big")}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "big", "namespace": "a", "uid": "u-big"},
		"data":     map[string]any{"bundle.pem": string(userinputtest.Payload(n, 0))},
	}}
	g := &Graph{Nodes: map[types.UID]*Node{ref.UID: {Obj: u, Ref: ref}}}
	g.Order = [][]*Node{{g.Nodes[ref.UID]}}
	dir := filepath.Join(t.TempDir(), "backup")
	man := Manifest{APIVersion: ManifestAPIVersion, Kind: ManifestKind, Scope: Scope{Namespace: "a"}}
	var err error
	w := testenv.MeasureMemory(func() { _, err = writeBackup(context.Background(), dir, g, man, Options{}) })
	if err != nil {
		t.Fatal(err)
	}
	t.Run("to-directory", func(t *testing.T) { testenv.CheckMemory(t, w, n, 25) })
	var rg *Graph
	r := testenv.MeasureMemory(func() { _, rg, err = ReadBackup(context.Background(), dir, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if rg.Count() != 1 {
		t.Fatalf("read %d objects, want 1", rg.Count())
	}
	t.Run("from-directory", func(t *testing.T) { testenv.CheckMemory(t, r, n, 25) })
}
