package move

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// BenchmarkMoveFleet moves a fleet of N clusters between two real API servers. Each cluster is a
// Cluster, DockerCluster, KubeadmControlPlane with 3 control-plane Machines, a MachineDeployment
// with a MachineSet and 3 worker Machines, a DockerMachine and KubeadmConfig per Machine, two
// DockerMachineTemplates, a KubeadmConfigTemplate, and kubeconfig/CA Secrets (28 objects; 17 of
// them carry finalizers, as the controllers leave them). The move runs in a child process (this
// test binary re-executed), so its peak RSS is the move's alone. It reports objects, API requests
// (source + target, from the start of discovery to the removal of the journal), seconds and peak
// RSS. Filling the source is not timed. MOVE_BENCH_CLUSTERS=10,100,300 picks the sizes.
//
// Each round also times the move's floor (moveFloor) on a third, fresh API server, and reports
// the move as a ratio to it.
func BenchmarkMoveFleet(b *testing.B) {
	sizes := []int{10, 100}
	if v := os.Getenv("MOVE_BENCH_CLUSTERS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("MOVE_BENCH_CLUSTERS=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			envs := testenv.StartN(b, 3, testenv.Options{CRDPaths: crdPaths(b)})
			src, dst, floor := envs[0], envs[1], envs[2]
			for _, e := range envs {
				prepareManagementCluster(b, e)
			}
			var objects, requests, served int64
			var seconds, floorSeconds, rss float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ns := fmt.Sprintf("fleet-%d", i)
				src.CreateNamespaces(b, ns)
				fillFleet(b, src, ns, n)
				floorSeconds += moveFloor(b, src, floor, ns)
				pre := snapshot(b, src.Client, ns)
				before := serverRequests(b, src) + serverRequests(b, dst)
				b.StartTimer()
				rep, maxRSS := benchChild(b, src, dst, ns)
				b.StopTimer()
				served += serverRequests(b, src) + serverRequests(b, dst) - before - 2
				// Nothing lost: every object in the target as it was in the source before the move.
				requireMoved(b, pre, src.Client, dst.Client, ns)
				objects += int64(rep.Objects)
				requests += rep.SourceRequests + rep.TargetRequests
				seconds += rep.Seconds
				rss = max(rss, maxRSS)
			}
			b.StopTimer()
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
			b.ReportMetric(float64(requests)/float64(objects), "requests/object")
			// The same count as the API servers see it, as for clusterctl below.
			b.ReportMetric(float64(served)/float64(objects), "served/object")
			b.ReportMetric(seconds/float64(b.N), "s/op")
			b.ReportMetric(floorSeconds/float64(b.N), "floor-s/op")
			b.ReportMetric(seconds/floorSeconds, "move/floor")
			b.ReportMetric(rss, "peak-RSS-MiB")
		})
	}
}

// moveFloor is the move's floor: the objects of ns in src, as a move creates them in its target
// (no status, no server-set metadata), created in floor (a fresh API server like the target) by
// the fastest writer that needs no order: all of them at once, 64 in flight, with no client rate
// limit. What is left is the API server's own work of storing them. Reading the objects is not
// timed; it returns the seconds of the creates.
func moveFloor(b *testing.B, src, floor *testenv.Env, ns string) float64 {
	b.Helper()
	ctx := testenv.Context(b)
	g, err := Discover(ctx, src.Client, Scope{Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, n := range g.Moved() {
		o, err := cleanForCreate(n.Obj, func(u types.UID) (types.UID, bool) { return u, true })
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, o)
	}
	floor.CreateNamespaces(b, ns)
	cfg := rest.CopyConfig(floor.Config)
	cfg.QPS = -1 // no client-side rate limit
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var eg errgroup.Group
	eg.SetLimit(64)
	for _, o := range objs {
		eg.Go(func() error {
			if err := c.Create(ctx, o); err != nil {
				return fmt.Errorf("the floor's create of %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start).Seconds()
}

// benchChild runs one move in a child process and returns its report and peak RSS (MiB).
func benchChild(b *testing.B, src, dst *testenv.Env, ns string) (*Report, float64) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), faultChildEnv+"=move", "FAULT_SRC="+src.Kubeconfig, "FAULT_DST="+dst.Kubeconfig,
		"FAULT_NS="+ns, "FAULT_REPORT=1", "FAULT_PARALLELISM="+strconv.Itoa(DefaultParallelism))
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	peak, err := testenv.RunPeakRSS(cmd)
	if err != nil {
		b.Fatalf("move: %v\n%s", err, errOut.String())
	}
	rep := &Report{}
	if err := json.Unmarshal([]byte(out.String()), rep); err != nil {
		b.Fatalf("reading the move's report: %v\n%s", err, out.String())
	}
	return rep, peak
}

// fillFleet writes n clusters into ns, a few at a time.
func fillFleet(b *testing.B, env *testenv.Env, ns string, n int) {
	b.Helper()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			bl := &builder{tb: b, c: env.Client, ns: ns}
			bl.addCluster(fmt.Sprintf("c%03d", i), clusterOpts{cpCount: 3, workers: 3})
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// BenchmarkClusterctlMoveFleet moves the same fleet with the reference clusterctl
// ($CAPCTL_CLUSTERCTL), for a side-by-side comparison with BenchmarkMoveFleet. Requests are
// counted by both API servers (apiserver_request_total), so both tools are counted alike; peak
// RSS is clusterctl's. MOVE_BENCH_CLUSTERS picks the sizes (default 10).
func BenchmarkClusterctlMoveFleet(b *testing.B) {
	bin := testenv.Clusterctl(b)
	sizes := []int{10}
	if v := os.Getenv("MOVE_BENCH_CLUSTERS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatalf("MOVE_BENCH_CLUSTERS=%q: %v", v, err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			src, dst := testenv.StartPair(b, testenv.Options{CRDPaths: crdPaths(b)})
			prepareManagementCluster(b, src)
			prepareManagementCluster(b, dst)
			var requests int64
			var seconds, rss float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ns := fmt.Sprintf("fleet-%d", i)
				src.CreateNamespaces(b, ns)
				fillFleet(b, src, ns, n)
				before := serverRequests(b, src) + serverRequests(b, dst)
				b.StartTimer()
				start := time.Now()
				cmd := exec.Command(bin, "move", "--kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig, "-n", ns)
				out, peak, err := testenv.RunSampled(cmd)
				seconds += time.Since(start).Seconds()
				b.StopTimer()
				if err != nil {
					b.Fatalf("clusterctl move: %v\n%s", err, out)
				}
				// The metrics reads themselves are two requests per server.
				requests += serverRequests(b, src) + serverRequests(b, dst) - before - 2
				rss = max(rss, peak)
			}
			objects := int64(28 * n * b.N)
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
			b.ReportMetric(float64(requests)/float64(objects), "served/object")
			b.ReportMetric(seconds/float64(b.N), "s/op")
			b.ReportMetric(rss, "peak-RSS-MiB")
		})
	}
}

// serverRequests is the API server's own count of the requests it served (apiserver_request_total).
func serverRequests(b *testing.B, env *testenv.Env) int64 { return env.ServedRequests(b) }
