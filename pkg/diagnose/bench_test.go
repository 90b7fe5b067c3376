package diagnose_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/diagnose"
)

// benchNodeNotReadyEvery: one cluster in this many of the benchmark fleet has a Machine whose
// Node is not Ready, and a kubeconfig Secret for a real workload API server, so that
// `diagnose clusters` reads that workload cluster.
const benchNodeNotReadyEvery = 50

// BenchmarkDiagnoseClustersFleet runs `capctl diagnose clusters -A` (the built binary, as a user
// runs it) over a fleet of 1000 clusters (describetest.Fleet, 37 objects each, on a management API
// server with the four providers and cert-manager; one in 50 clusters with a Node not Ready
// behind a second, real, workload API server): seconds, requests as the management API server
// counted them and the child's peak RSS, each the median of DIAGNOSE_BENCH_RUNS (3) runs after one
// warm-up, with the load average. `capctl describe clusters -A` over the same server is measured
// alike in the same run, as the pace of one list of the fleet. The in-process run reports the
// client's own management-side request count and the workload clusters read.
// DIAGNOSE_FLEET_CLUSTERS=N picks another fleet size.
func BenchmarkDiagnoseClustersFleet(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark: needs a real API server")
	}
	n := 1000
	if v := os.Getenv("DIAGNOSE_FLEET_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("DIAGNOSE_FLEET_CLUSTERS=%q: want a positive number", v)
		}
	}
	testenv.FixturesDir(b)
	ctx := context.Background()
	mgmt, wl := testenv.StartPair(b, testenv.Options{})
	wlKubeconfig, err := os.ReadFile(wl.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	needing := 0
	diagnosetest.SeedFleet(ctx, b, mgmt, n, 20, func(i int, objs []*unstructured.Unstructured) {
		if i%benchNodeNotReadyEvery == benchNodeNotReadyEvery/2 {
			nodeNotReady(b, objs, wlKubeconfig)
			needing++
		}
	})

	bin := testenv.BuildCapctl(b)
	home := b.TempDir()
	childEnv := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1")
	b.Run(fmt.Sprintf("clusters=%d/capctl-diagnose", n), func(b *testing.B) {
		runFleetChild(b, mgmt, n, func() *exec.Cmd {
			cmd := exec.Command(bin, "diagnose", "clusters", "-A", "--kubeconfig", mgmt.Kubeconfig)
			cmd.Env = childEnv
			return cmd
		})
	})
	b.Run(fmt.Sprintf("clusters=%d/capctl-describe", n), func(b *testing.B) {
		runFleetChild(b, mgmt, n, func() *exec.Cmd {
			cmd := exec.Command(bin, "describe", "clusters", "-A", "--kubeconfig", mgmt.Kubeconfig)
			cmd.Env = childEnv
			return cmd
		})
	})
	b.Run(fmt.Sprintf("clusters=%d/in-process", n), func(b *testing.B) {
		debug.FreeOSMemory()
		testenv.ResetPeakRSS()
		var seconds []float64
		var requests int64
		read := 0
		for i := 0; i < fleetBenchRuns(b); i++ {
			start := time.Now()
			c, err := cluster.New(cluster.Options{Kubeconfig: mgmt.Kubeconfig})
			if err != nil {
				b.Fatal(err)
			}
			fr, err := diagnose.Clusters(ctx, c, diagnose.ClustersRequest{AllNamespaces: true, ClusterRequest: diagnose.ClusterRequest{Workload: true}})
			if err != nil {
				b.Fatal(err)
			}
			seconds = append(seconds, time.Since(start).Seconds())
			requests = c.Requests()
			if len(fr.Clusters) != n {
				b.Fatalf("%d rows, want %d", len(fr.Clusters), n)
			}
			read = 0
			for _, r := range fr.Clusters {
				if r.Workload != nil {
					read++
					if !r.Workload.Reachable {
						b.Fatalf("%s/%s: workload cluster not read: %s", r.Namespace, r.Name, r.Workload.Error)
					}
				}
			}
			if read != needing {
				b.Fatalf("%d workload clusters read, want %d", read, needing)
			}
		}
		b.ReportMetric(testenv.Median(seconds), "s/op")
		b.ReportMetric(float64(requests), "mgmt-requests/op")
		b.ReportMetric(float64(read), "workload-reads/op")
		b.ReportMetric(testenv.PeakRSSMiB(), "peak-RSS-MiB")
		b.Logf("runs %v s, load %s", seconds, testenv.LoadAverage())
	})
}

// nodeNotReady gives a fleet cluster's first Machine a Node whose Ready state is Unknown and
// points its kubeconfig Secret at the workload API server.
func nodeNotReady(tb testing.TB, objs []*unstructured.Unstructured, kubeconfig []byte) {
	tb.Helper()
	machineDone := false
	for _, o := range objs {
		switch {
		case o.GetKind() == "Machine" && !machineDone:
			machineDone = true
			_ = unstructured.SetNestedField(o.Object, o.GetName(), "status", "nodeRef", "name")
			cs, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
			cs = append(cs, map[string]any{"type": "NodeReady", "status": "Unknown", "reason": "NodeStatusUnknown",
				"message": "Kubelet stopped posting node status.", "lastTransitionTime": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
			_ = unstructured.SetNestedSlice(o.Object, cs, "status", "conditions")
		case o.GetKind() == "Secret" && strings.HasSuffix(o.GetName(), "-kubeconfig"):
			o.Object["data"] = map[string]any{"value": base64.StdEncoding.EncodeToString(kubeconfig)}
		}
	}
	if !machineDone {
		tb.Fatal("fleet cluster without a Machine")
	}
}

func fleetBenchRuns(tb testing.TB) int {
	if v := os.Getenv("DIAGNOSE_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			tb.Fatalf("DIAGNOSE_BENCH_RUNS=%q: want a positive number", v)
		}
		return n
	}
	return 3
}

// runFleetChild measures a command over the fleet (testenv.BenchChild): one row per cluster,
// exit code 2 (problems found) being the expected end of a diagnosis of this fleet.
func runFleetChild(b *testing.B, mgmt *testenv.Env, clusters int, command func() *exec.Cmd) {
	b.Helper()
	mgmt.BenchChild(b, fleetBenchRuns(b), clusters, []int{2}, command)
}
