package clusterinit_test

import (
	"testing"

	"github.com/capctl/capctl/internal/testenv"
	clusterinit "github.com/capctl/capctl/pkg/init"
)

// BenchmarkFirstInit measures a first init of cert-manager (CRDs), core, kubeadm bootstrap and
// control plane and Docker (v1.14.0, no wait) into a fresh API server: wall time, API requests and
// objects applied per init. Run with `make bench BENCH=FirstInit` (-benchtime 1x).
func BenchmarkFirstInit(b *testing.B) {
	fixtures := testenv.FixturesDir(b)
	cfgPath := writeConfigTB(b, fixtures)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		env := testenv.Start(b, testenv.Options{})
		cl := clientsTB(b, cfgPath, env.Config)
		b.StartTimer()
		res, err := clusterinit.Init(testenv.Context(b), cl, clusterinit.Options{
			Validate: true,
			Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"},
				ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		objects := res.CertManager.Applied
		for _, p := range res.Providers {
			objects += p.Objects
		}
		b.ReportMetric(float64(cl.Cluster.Requests()), "requests/op")
		b.ReportMetric(float64(objects), "objects/op")
		env.Stop()
	}
}
