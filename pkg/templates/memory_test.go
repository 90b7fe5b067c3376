package templates

import (
	"context"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/pkg/variables"
)

// TestRenderLargeObjectMemory: `generate yaml --from` of one very large object (a ConfigMap of
// testenv.LargeInputSize bytes with one variable) allocates a bounded multiple of its size
// (docs/benchmarks.md, "Very large objects").
func TestRenderLargeObjectMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("renders tens of MiB")
	}
	in := append(userinputtest.LargeConfigMap("${NAMESPACE}", "big", testenv.LargeInputSize(t)), "    ${TAIL}\n"...)
	lookup := variables.FromMap(map[string]string{"NAMESPACE": "a", "TAIL": "end"})
	var res *Result
	var err error
	m := testenv.LeastMemory(3, func() { res, err = Render(context.Background(), Input{Name: "big.yaml", Template: in, Lookup: lookup}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 || res.Objects[0].GetNamespace() != "a" {
		t.Fatalf("rendered %d objects, want the ConfigMap in namespace a", len(res.Objects))
	}
	testenv.CheckMemory(t, m, len(in), 27) // 30× before documents were split without copies
}
