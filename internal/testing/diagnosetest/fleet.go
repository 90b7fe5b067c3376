package diagnosetest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

// SeedFleet makes env the benchmarks' management cluster: the providers and cert-manager
// (Management) and n fleet clusters (describetest.Fleet, perNamespace to a namespace), each
// changed by mutate (when set, with its index) before it is applied. It says on stderr how long
// the seeding took.
func SeedFleet(ctx context.Context, tb testing.TB, env *testenv.Env, n, perNamespace int, mutate func(i int, objs []*unstructured.Unstructured)) {
	tb.Helper()
	Management(ctx, tb, env)
	env.CreateNamespaces(tb, describetest.FleetNamespaces(n, perNamespace)...)
	seed, err := cluster.New(cluster.Options{Kubeconfig: env.Kubeconfig, QPS: 1e6, Burst: 1e6})
	if err != nil {
		tb.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for i, s := range describetest.Fleet(n, perNamespace) {
		if mutate != nil {
			mutate(i, s.Objects)
		}
		objs = append(objs, s.Objects...)
	}
	start := time.Now()
	describetest.ApplyConcurrently(ctx, tb, seed, objs, 64)
	fmt.Fprintf(os.Stderr, "seeded %d clusters (%d objects) in %s, load %s\n", n, len(objs), time.Since(start).Round(time.Second), testenv.LoadAverage())
}
