package describe_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

// benchWorkers are the numbers of worker machines the describe benchmarks use (each cluster has 3
// control-plane machines too): DESCRIBE_BENCH_MACHINES=1000,10000, default 1000.
func benchWorkers(b *testing.B) []int {
	v := os.Getenv("DESCRIBE_BENCH_MACHINES")
	if v == "" {
		return []int{1000}
	}
	var sizes []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			b.Fatalf("DESCRIBE_BENCH_MACHINES=%q: want worker counts like 1000,10000", v)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// benchRuns is how many timed runs each figure is the median of: DESCRIBE_BENCH_RUNS, default 3.
func benchRuns(b *testing.B) int {
	v := os.Getenv("DESCRIBE_BENCH_RUNS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("DESCRIBE_BENCH_RUNS=%q: want a positive number", v)
	}
	return n
}

var (
	benchMu       sync.Mutex
	benchClusters = map[int]*describetest.Scenario{}
)

// benchCluster creates, once per package run, a cluster of 3 control-plane and the given number
// of worker machines (each with its DockerMachine and KubeadmConfig; 1 % of them not ready, so
// grouping leaves a few rows), and reads it once in process, so that the API server's first
// reads of each kind are not in any timing.
func benchCluster(b *testing.B, workers int) *describetest.Scenario {
	setup(b)
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchClusters[workers]; ok {
		return s
	}
	ctx := context.Background()
	s := describetest.Large(fmt.Sprintf("bench-%d", workers), 3, workers)
	env.CreateNamespaces(b, s.Namespace)
	start := time.Now()
	describetest.Apply(ctx, b, env.Client, s.Objects)
	b.Logf("created %d objects in %s", len(s.Objects), time.Since(start).Round(time.Millisecond))
	s.Objects = nil
	for _, grouping := range []bool{true, false} {
		if _, err := describe.Discover(ctx, env.Client, describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: grouping}); err != nil {
			b.Fatal(err)
		}
	}
	benchClusters[workers] = s
	return s
}

// BenchmarkDescribeCluster runs `describe cluster` as a user does, as a child process, against
// a cluster of 3 control-plane + N worker machines (DESCRIBE_BENCH_MACHINES) in a real API
// server: capctl (built from this tree) and the reference clusterctl v1.14.2 ($CAPCTL_CLUSTERCTL;
// skipped when unset) one after the other on the same server, grouped (the default) and not.
// clusterctl's ungrouped view reads every object by its own GET (minutes on a loaded machine), so
// it runs only up to DESCRIBE_BENCH_CLUSTERCTL_UNGROUPED_MAX (1003) machines; 0 skips it. Each figure is the median of DESCRIBE_BENCH_RUNS (3) runs: seconds, requests as the
// API server counted them (apiserver_request_total, so both tools are counted alike) and the
// child's peak RSS (sampled). The load average is logged with each figure.
func BenchmarkDescribeCluster(b *testing.B) {
	capctl := testenv.BuildCapctl(b)
	clusterctl := os.Getenv("CAPCTL_CLUSTERCTL")
	if clusterctl == "" {
		b.Log("CAPCTL_CLUSTERCTL is unset: clusterctl's figures are skipped (make test builds it)")
	}
	// DESCRIBE_BENCH_BASELINE: another capctl binary (say, built from main) measured in the same
	// run on the same server, as tool=baseline.
	baseline := os.Getenv("DESCRIBE_BENCH_BASELINE")
	runs := benchRuns(b)
	ungroupedMax := 1003
	if v := os.Getenv("DESCRIBE_BENCH_CLUSTERCTL_UNGROUPED_MAX"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("DESCRIBE_BENCH_CLUSTERCTL_UNGROUPED_MAX=%q: want a number of machines", v)
		}
		ungroupedMax = n
	}
	// DESCRIBE_BENCH_UNCOMPRESSED=1 also runs each tool with a kubeconfig that sets
	// disable-compression (kubectl's --disable-compression): the API server then sends the lists
	// as they are instead of gzipped, which on loopback saves both sides the CPU of gzip.
	compressions := []bool{true}
	if os.Getenv("DESCRIBE_BENCH_UNCOMPRESSED") == "1" {
		compressions = append(compressions, false)
	}
	for _, workers := range benchWorkers(b) {
		machines := workers + 3
		for _, tool := range []string{"capctl", "baseline", "clusterctl"} {
			for _, compressed := range compressions {
				for _, grouping := range []bool{true, false} {
					name := fmt.Sprintf("machines=%d/tool=%s/grouping=%v", machines, tool, grouping)
					if !compressed {
						name += "/uncompressed" // the default figures keep their names
					}
					b.Run(name, func(b *testing.B) {
						bin := capctl
						if tool == "baseline" {
							if baseline == "" {
								b.Skip("DESCRIBE_BENCH_BASELINE is unset")
							}
							bin = baseline
						}
						if tool == "clusterctl" {
							if clusterctl == "" {
								b.Skip("CAPCTL_CLUSTERCTL is unset")
							}
							if !grouping && machines > ungroupedMax {
								b.Skipf("clusterctl reads each object by GET without grouping: run up to %d machines only (DESCRIBE_BENCH_CLUSTERCTL_UNGROUPED_MAX)", ungroupedMax)
							}
							bin = clusterctl
						}
						s := benchCluster(b, workers)
						home := b.TempDir()
						kubeconfig := env.Kubeconfig
						if !compressed {
							kubeconfig = uncompressedKubeconfig(b, env.Kubeconfig)
						}
						var seconds, requests, rss []float64
						for i := 0; i < runs; i++ {
							cmd := exec.Command(bin, "describe", "cluster", s.Cluster, "-n", s.Namespace, "--kubeconfig", kubeconfig,
								"--grouping="+strconv.FormatBool(grouping))
							cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "NO_COLOR=1", "CLUSTERCTL_DISABLE_VERSIONCHECK=true")
							before := env.ServedRequests(b)
							start := time.Now()
							out, peak, err := testenv.RunSampled(cmd)
							elapsed := time.Since(start).Seconds()
							served := env.ServedRequests(b) - before - 1 // without the metrics read itself
							if err != nil {
								b.Fatalf("%s describe cluster: %v\n%s", tool, err, out)
							}
							if !treeRoot.MatchString(string(out)) {
								b.Fatalf("%s describe cluster printed no tree of %s:\n%s", tool, s.Cluster, out)
							}
							seconds, requests, rss = append(seconds, elapsed), append(requests, float64(served)), append(rss, peak)
						}
						b.ReportMetric(testenv.Median(seconds), "s/op")
						b.ReportMetric(testenv.Median(requests), "requests/op")
						b.ReportMetric(testenv.Median(rss), "peak-RSS-MiB")
						b.Logf("%s, machines=%d, compressed=%v, grouping=%v: runs %s; load average %s", tool, machines, compressed, grouping, formatSeconds(seconds), testenv.LoadAverage())
					})
				}
			}
		}
	}
}

// uncompressedKubeconfig writes a copy of the kubeconfig at path whose clusters set
// disable-compression.
func uncompressedKubeconfig(b *testing.B, path string) string {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.DisableCompression = true
	}
	out := filepath.Join(b.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkDescribeInProcess is one describe cluster (a fresh client, so discovery is counted,
// Discover and Render) inside the test process, for profiling with -cpuprofile/-memprofile:
// seconds, the client's own request count, the tree's rows and the process's peak RSS during
// the runs (which includes the benchmark's own memory; BenchmarkDescribeCluster has the CLI's).
func BenchmarkDescribeInProcess(b *testing.B) {
	ctx := context.Background()
	for _, workers := range benchWorkers(b) {
		for _, grouping := range []bool{true, false} {
			b.Run(fmt.Sprintf("machines=%d/grouping=%v", workers+3, grouping), func(b *testing.B) {
				s := benchCluster(b, workers)
				opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: grouping}
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

// treeRoot is the root row of the benchmark cluster's tree as either tool prints it
// ("Cluster NAMESPACE/big" or "Cluster/big").
var treeRoot = regexp.MustCompile(`(?m)^Cluster[ /](\S+/)?big\s`)

func countRows(n *describe.Node) int {
	c := 1
	for _, ch := range n.Children {
		c += countRows(ch)
	}
	return c
}

func formatSeconds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64) + "s"
	}
	return strings.Join(parts, " ")
}
