package describe_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

// fleetPerNamespace: the benchmark fleet puts this many clusters in each namespace.
const fleetPerNamespace = 20

// seedFleet starts a fresh API server with the Cluster API CRDs and a fleet of n clusters
// (describetest.Fleet, FleetObjectsPerCluster objects each) created by many concurrent writers.
func seedFleet(tb testing.TB, n int) *testenv.Env {
	tb.Helper()
	testenv.FixturesDir(tb)
	fe := testenv.Start(tb, testenv.Options{})
	describetest.InstallCRDs(tb, fe)
	fe.CreateNamespaces(tb, describetest.FleetNamespaces(n, fleetPerNamespace)...)
	// A client of its own, without the default rate limit: seeding is tens of thousands of writes.
	seed, err := cluster.New(cluster.Options{Kubeconfig: fe.Kubeconfig, QPS: 1e6, Burst: 1e6})
	if err != nil {
		tb.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, s := range describetest.Fleet(n, fleetPerNamespace) {
		objs = append(objs, s.Objects...)
	}
	start := time.Now()
	describetest.ApplyConcurrently(context.Background(), tb, seed, objs, 64)
	// On stderr: a parent benchmark's log is not printed.
	fmt.Fprintf(os.Stderr, "seeded %d clusters (%d objects) in %s, load %s\n", n, len(objs), time.Since(start).Round(time.Second), testenv.LoadAverage())
	return fe
}

// BenchmarkDescribeClustersFleet runs `capctl describe clusters -A` (the built binary, as a user
// runs it) over a fleet of 1000 clusters, about 36,000 objects, in a real API server: seconds,
// requests as the server counted them and the child's peak RSS, each the median of
// DESCRIBE_BENCH_RUNS (3) runs after one warm-up run, with the load average. `kubectl get
// clusters -A` over the same server is
// measured alike as the API server's own pace for one list of the clusters (clusterctl has no
// all-clusters view to compare with). The in-process run (Summarize with a fresh client) is there
// for profiling with -cpuprofile and reports the client's own request count.
// DESCRIBE_FLEET_CLUSTERS=N picks another fleet size.
func BenchmarkDescribeClustersFleet(b *testing.B) {
	testenv.Integration(b)
	n := fleetClusters(b)
	fe := seedFleet(b, n)
	bin := testenv.BuildCapctl(b)
	home := b.TempDir()
	childEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1")

	b.Run(fmt.Sprintf("clusters=%d/capctl", n), func(b *testing.B) {
		runChild(b, fe, n, func() *exec.Cmd {
			cmd := exec.Command(bin, "describe", "clusters", "-A", "--kubeconfig", fe.Kubeconfig)
			cmd.Env = childEnv
			return cmd
		})
	})
	b.Run(fmt.Sprintf("clusters=%d/kubectl-get-clusters", n), func(b *testing.B) {
		kubectl := filepath.Join(testenv.AssetsDir(), "kubectl")
		if _, err := os.Stat(kubectl); err != nil {
			b.Skipf("no kubectl in %s", testenv.AssetsDir())
		}
		runChild(b, fe, n, func() *exec.Cmd {
			cmd := exec.Command(kubectl, "get", "clusters.cluster.x-k8s.io", "-A", "--kubeconfig", fe.Kubeconfig)
			cmd.Env = append(childEnv, "KUBECACHEDIR="+filepath.Join(home, "kubectl-cache"))
			return cmd
		})
	})
	b.Run(fmt.Sprintf("clusters=%d/in-process", n), func(b *testing.B) {
		ctx := context.Background()
		debug.FreeOSMemory()
		testenv.ResetPeakRSS()
		var seconds []float64
		var requests int64
		for i := 0; i < benchRuns(b); i++ {
			start := time.Now()
			c, err := cluster.New(cluster.Options{Kubeconfig: fe.Kubeconfig})
			if err != nil {
				b.Fatal(err)
			}
			rows, err := describe.Summarize(ctx, c, describe.SummaryRequest{AllNamespaces: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := describe.RenderSummary(io.Discard, rows, describe.RenderOptions{}); err != nil {
				b.Fatal(err)
			}
			seconds = append(seconds, time.Since(start).Seconds())
			requests = c.Requests()
			if len(rows) != n {
				b.Fatalf("%d rows, want %d", len(rows), n)
			}
		}
		b.ReportMetric(testenv.Median(seconds), "s/op")
		b.ReportMetric(float64(requests), "requests/op")
		b.ReportMetric(testenv.PeakRSSMiB(), "peak-RSS-MiB")
		b.Logf("load %s", testenv.LoadAverage())
	})
}

// runChild measures a command over the fleet (testenv.BenchChild): one row per cluster.
func runChild(b *testing.B, fe *testenv.Env, clusters int, command func() *exec.Cmd) {
	b.Helper()
	fe.BenchChild(b, benchRuns(b), clusters, nil, command)
}

// BenchmarkDescribeClustersAcrossContexts: `capctl describe clusters -A` over one management
// cluster of N clusters (DESCRIBE_FLEET_CLUSTERS, default 1000) and `--all-contexts` over three
// such management clusters (3×N), in the same run: the three are read concurrently, so the goal
// is at most 1.3× the one's seconds, with the requests (summed over the servers) per management
// cluster as the one's: O(kinds), not O(clusters).
func BenchmarkDescribeClustersAcrossContexts(b *testing.B) {
	testenv.Integration(b)
	n := fleetClusters(b)
	envs := []*testenv.Env{seedFleet(b, n), seedFleet(b, n), seedFleet(b, n)}
	var files []string
	for i, e := range envs {
		files = append(files, e.KubeconfigAs(b, fmt.Sprintf("mgmt-%d", i+1)))
	}
	bin := testenv.BuildCapctl(b)
	home := b.TempDir()
	childEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1")

	b.Run(fmt.Sprintf("management=1/clusters=%d", n), func(b *testing.B) {
		runChild(b, envs[0], n, func() *exec.Cmd {
			cmd := exec.Command(bin, "describe", "clusters", "-A", "--kubeconfig", envs[0].Kubeconfig)
			cmd.Env = childEnv
			return cmd
		})
	})
	// The host's own bound: the three API servers share this machine's cores, so listing three
	// fleets at once costs them about three times one fleet's CPU whoever asks. `kubectl get
	// clusters -A`, one server alone and then all three at once, measures that pace.
	b.Run(fmt.Sprintf("management=1/clusters=%d/kubectl-get-clusters", n), func(b *testing.B) {
		kubectlAtOnce(b, envs[:1], n, home)
	})
	b.Run(fmt.Sprintf("management=3/clusters=%d/kubectl-get-clusters-at-once", 3*n), func(b *testing.B) {
		kubectlAtOnce(b, envs, n, home)
	})
	b.Run(fmt.Sprintf("management=3/clusters=%d", 3*n), func(b *testing.B) {
		// The rows, a blank line, then the management clusters' table (a header and 3 rows).
		testenv.BenchChildOn(b, envs, benchRuns(b), 3*n+5, nil, func() *exec.Cmd {
			cmd := exec.Command(bin, "describe", "clusters", "-A", "--all-contexts")
			cmd.Env = append(childEnv, "KUBECONFIG="+strings.Join(files, string(os.PathListSeparator)))
			return cmd
		})
	})
}

// fleetClusters is the benchmark fleet's size: DESCRIBE_FLEET_CLUSTERS, 1000 by default.
func fleetClusters(b *testing.B) int {
	v := os.Getenv("DESCRIBE_FLEET_CLUSTERS")
	if v == "" {
		return 1000
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("DESCRIBE_FLEET_CLUSTERS=%q: want a positive number", v)
	}
	return n
}

// kubectlAtOnce times `kubectl get clusters -A` run against every one of envs at the same time
// (one process each), until the last one is done: the median of benchRuns runs after a warm-up,
// with the load average. Each must print a header and n rows.
func kubectlAtOnce(b *testing.B, envs []*testenv.Env, n int, home string) {
	kubectl := filepath.Join(testenv.AssetsDir(), "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		b.Skipf("no kubectl in %s", testenv.AssetsDir())
	}
	var clientCPU, serverCPU []float64
	once := func() float64 {
		cmds := make([]*exec.Cmd, len(envs))
		outs := make([]strings.Builder, len(envs))
		cpuBefore := testenv.ServersCPU(b, envs)
		start := time.Now()
		for i, e := range envs {
			cmds[i] = exec.Command(kubectl, "get", "clusters.cluster.x-k8s.io", "-A", "--kubeconfig", e.Kubeconfig)
			cmds[i].Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(home, fmt.Sprintf("kubectl-cache-%d", i)))
			cmds[i].Stdout = &outs[i]
			if err := cmds[i].Start(); err != nil {
				b.Fatal(err)
			}
		}
		for i, c := range cmds {
			if err := c.Wait(); err != nil {
				b.Fatalf("kubectl get clusters on server %d: %v", i+1, err)
			}
		}
		seconds := time.Since(start).Seconds()
		var cpu float64
		for _, c := range cmds {
			cpu += testenv.ProcessCPU(c)
		}
		clientCPU, serverCPU = append(clientCPU, cpu), append(serverCPU, testenv.ServersCPU(b, envs)-cpuBefore)
		for i := range outs {
			if lines := strings.Count(strings.TrimSpace(outs[i].String()), "\n") + 1; lines != n+1 {
				b.Fatalf("server %d: %d lines from kubectl, want a header and %d rows", i+1, lines, n)
			}
		}
		return seconds
	}
	once()
	clientCPU, serverCPU = nil, nil
	var secs []float64
	for i := 0; i < benchRuns(b); i++ {
		secs = append(secs, once())
	}
	b.ReportMetric(testenv.Median(secs), "s/op")
	testenv.LogCPUFloor(b, testenv.Median(clientCPU), testenv.Median(serverCPU))
	b.Logf("runs %v s, load %s", secs, testenv.LoadAverage())
}
