package describe_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/describetest"
	"github.com/capctl/capctl/internal/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

// BenchmarkDescribe1000Machines describes a cluster with a control plane of 3 machines and 1000
// worker machines (each with its DockerMachine and KubeadmConfig) in a real API server, grouped
// (the default view) and not. Each iteration is one CLI run: a fresh client (so discovery is
// counted), Discover and Render. It reports seconds, the HTTP requests of that run (they must not
// grow with the machines), the tree's rows, and the peak RSS of the process during the runs.
// DESCRIBE_BENCH_MACHINES=1000,10000 picks the numbers of workers.
func BenchmarkDescribe1000Machines(b *testing.B) {
	setup(b)
	sizes := []int{1000}
	if v := os.Getenv("DESCRIBE_BENCH_MACHINES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("DESCRIBE_BENCH_MACHINES=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	ctx := context.Background()
	for _, workers := range sizes {
		ns := "bench"
		if workers != 1000 {
			ns = fmt.Sprintf("bench-%d", workers)
		}
		s := describetest.Large(ns, 3, workers)
		env.CreateNamespaces(b, s.Namespace)
		start := time.Now()
		describetest.Apply(ctx, b, env.Client, s.Objects)
		b.Logf("created %d objects in %s", len(s.Objects), time.Since(start).Round(time.Millisecond))
		s.Objects = nil

		for _, grouping := range []bool{true, false} {
			b.Run(fmt.Sprintf("machines=%d/grouping=%v", workers+3, grouping), func(b *testing.B) {
				opts := describe.Options{Namespace: s.Namespace, Name: s.Cluster, Grouping: grouping}
				// Warm the API server (first reads of each CRD's storage) outside the timing.
				if _, err := describe.Discover(ctx, env.Client, opts); err != nil {
					b.Fatal(err)
				}
				debug.FreeOSMemory()
				testenv.ResetPeakRSS()
				var requests int64
				var rows int
				var seconds float64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
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
					seconds += time.Since(start).Seconds()
					requests = c.Requests()
					rows = countRows(tree.Root)
				}
				b.StopTimer()
				b.ReportMetric(seconds/float64(b.N), "s/op")
				b.ReportMetric(float64(requests), "requests/op")
				b.ReportMetric(float64(rows), "rows")
				b.ReportMetric(testenv.PeakRSSMiB(), "peak-RSS-MiB")
			})
		}
	}
}

func countRows(n *describe.Node) int {
	c := 1
	for _, ch := range n.Children {
		c += countRows(ch)
	}
	return c
}
