package move

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/capctl/capctl/internal/testenv"
)

// BenchmarkMoveFleet moves a fleet of N clusters between two real API servers. Each cluster is a
// Cluster, DockerCluster, KubeadmControlPlane with 3 control-plane Machines, a MachineDeployment
// with a MachineSet and 3 worker Machines, a DockerMachine and KubeadmConfig per Machine, two
// DockerMachineTemplates, a KubeadmConfigTemplate, and kubeconfig/CA Secrets (28 objects).
// It reports objects, API requests (source + target, from the start of discovery to the end of the
// verification) and seconds. Filling the source is not timed.
func BenchmarkMoveFleet(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			src, dst := testenv.StartPair(b, testenv.Options{CRDPaths: crdPaths(b)})
			prepareManagementCluster(b, src)
			prepareManagementCluster(b, dst)
			ctx := context.Background()
			var objects, requests int64
			var seconds float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ns := fmt.Sprintf("fleet-%d", i)
				src.CreateNamespaces(b, ns)
				fillFleet(b, src, ns, n)
				b.StartTimer()
				rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
				if err != nil {
					b.Fatalf("move: %v", err)
				}
				objects += int64(rep.Objects)
				requests += rep.SourceRequests + rep.TargetRequests
				seconds += rep.Seconds
			}
			b.StopTimer()
			b.ReportMetric(float64(objects)/float64(b.N), "objects/op")
			b.ReportMetric(float64(requests)/float64(b.N), "requests/op")
			b.ReportMetric(float64(requests)/float64(objects), "requests/object")
			b.ReportMetric(seconds/float64(b.N), "s/op")
		})
	}
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
