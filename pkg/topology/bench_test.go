package topology_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/topologytest"
	"github.com/capctl/capctl/pkg/topology"
)

// BenchmarkTopologyPlan runs `capctl topology plan` (the built binary, as a user runs it) on a
// new worker machine template for a fleet of TOPOLOGY_BENCH_CLUSTERS (100) Clusters of one
// ClusterClass, reconciled as the topology controller leaves them (topologytest): seconds,
// requests the API server served and the child's peak RSS, the median of 3 runs after a warm-up,
// with the load average.
func BenchmarkTopologyPlan(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark: needs a real API server")
	}
	n := 100
	if v := os.Getenv("TOPOLOGY_BENCH_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TOPOLOGY_BENCH_CLUSTERS=%q: want a positive number", v)
		}
	}
	te, dir := planEnvN(b, n)
	ctx := context.Background()
	start := time.Now()
	if err := topologytest.Reconcile(ctx, te.Client, "fleet"); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "reconciled %d clusters in %s, load %s\n", n, time.Since(start).Round(time.Second), testenv.LoadAverage())
	change := workerTemplateChange(b, te, dir)

	bin := testenv.BuildCapctl(b)
	home := b.TempDir()
	once := func() (float64, float64, float64) {
		cmd := exec.Command(bin, "topology", "plan", "-f", change, "--kubeconfig", te.Kubeconfig, "-o", "json")
		cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
		before := te.ServedRequests(b)
		t0 := time.Now()
		out, peak, err := testenv.RunSampled(cmd)
		secs := time.Since(t0).Seconds()
		served := te.ServedRequests(b) - before - 1
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != topology.ExitChanges) {
			b.Fatalf("%v\n%.2000s", err, out)
		}
		res := &topology.PlanResult{}
		if err := json.Unmarshal(out, res); err != nil || len(res.Clusters) != n {
			b.Fatalf("%v: %d clusters planned, want %d", err, len(res.Clusters), n)
		}
		for _, c := range res.Clusters {
			if c.Partial != "" || len(c.MachineDeployments) != 1 || !c.MachineDeployments[0].RollsOut {
				b.Fatalf("%s: %+v", c.Name, c)
			}
		}
		return secs, float64(served), peak
	}
	once()
	var secs, reqs, rss []float64
	for i := 0; i < 3; i++ {
		s, r, p := once()
		secs, reqs, rss = append(secs, s), append(reqs, r), append(rss, p)
	}
	b.ReportMetric(testenv.Median(secs), "s/op")
	b.ReportMetric(testenv.Median(reqs), "served/op")
	b.ReportMetric(testenv.Median(reqs)/float64(n), "served/cluster")
	b.ReportMetric(testenv.Median(rss), "peak-RSS-MiB")
	b.Logf("clusters %d, runs %v s, load %s", n, secs, testenv.LoadAverage())
}
