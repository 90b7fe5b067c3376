package describe_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/describetest"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

// BenchmarkDescribe1000Machines describes a cluster with a control plane of 3 machines and 1000
// worker machines (each with its DockerMachine and KubeadmConfig) in a real API server. Each
// iteration is one CLI run: a fresh client (so discovery is counted), Discover and Render.
// requests/op is the number of HTTP requests of that run; it must not grow with the machines.
func BenchmarkDescribe1000Machines(b *testing.B) {
	setup(b)
	ctx := context.Background()
	s := describetest.Large("bench", 3, 1000)
	env.CreateNamespaces(b, s.Namespace)
	start := time.Now()
	describetest.Apply(ctx, b, env.Client, s.Objects)
	b.Logf("created %d objects in %s", len(s.Objects), time.Since(start).Round(time.Millisecond))

	for _, grouping := range []bool{true, false} {
		b.Run(fmt.Sprintf("grouping=%v", grouping), func(b *testing.B) {
			opts := describe.Options{Namespace: s.Namespace, Name: s.Cluster, Grouping: grouping}
			// Warm the API server (first reads of each CRD's storage) outside the timing.
			if _, err := describe.Discover(ctx, env.Client, opts); err != nil {
				b.Fatal(err)
			}
			var requests int64
			var rows int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := cluster.New(cluster.Options{Kubeconfig: env.Kubeconfig})
				if err != nil {
					b.Fatal(err)
				}
				tree, err := describe.Discover(ctx, c, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := describe.Render(io.Discard, tree, describe.RenderOptions{Now: describetest.Now}); err != nil {
					b.Fatal(err)
				}
				requests = c.Requests()
				rows = countRows(tree.Root)
			}
			b.ReportMetric(float64(requests), "requests/op")
			b.ReportMetric(float64(rows), "rows")
		})
	}
}

func countRows(n *describe.Node) int {
	c := 1
	for _, ch := range n.Children {
		c += countRows(ch)
	}
	return c
}
