package clusterinit_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/installtest"
	"github.com/capctl/capctl/internal/testenv"
	clusterinit "github.com/capctl/capctl/pkg/init"
)

// BenchmarkFirstInit measures a first init of cert-manager (CRDs), core, kubeadm bootstrap and
// control plane and Docker (v1.14.0, no wait) into a fresh API server: seconds, API requests (as
// the client sent them and as the server counted them), objects applied and peak RSS per init.
// Run with `make bench BENCH=FirstInit` (-benchtime 1x), which also runs
// BenchmarkClusterctlFirstInit for the same init by the reference clusterctl.
func BenchmarkFirstInit(b *testing.B) {
	fixtures := testenv.FixturesDir(b)
	cfgPath := writeConfigTB(b, fixtures)
	var seconds, rss float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		env := testenv.Start(b, testenv.Options{})
		cl := clientsTB(b, cfgPath, env.Config)
		before := env.ServedRequests(b)
		testenv.ResetPeakRSS()
		b.StartTimer()
		start := time.Now()
		res, err := clusterinit.Init(testenv.Context(b), cl, clusterinit.Options{
			Validate: true,
			Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"},
				ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}},
		})
		seconds += time.Since(start).Seconds()
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		rss = max(rss, testenv.PeakRSSMiB())
		objects := res.CertManager.Applied
		for _, p := range res.Providers {
			objects += p.Objects
		}
		b.ReportMetric(float64(cl.Cluster.Requests()), "requests/op")
		b.ReportMetric(float64(env.ServedRequests(b)-before-1), "served/op")
		b.ReportMetric(float64(objects), "objects/op")
		env.Stop()
	}
	b.ReportMetric(seconds/float64(b.N), "s/op")
	b.ReportMetric(rss, "peak-RSS-MiB")
}

// BenchmarkClusterctlFirstInit is the same init by the reference clusterctl ($CAPCTL_CLUSTERCTL)
// from the same local repository into a fresh API server, for a side-by-side comparison with
// BenchmarkFirstInit: seconds, requests as the server counted them, and clusterctl's peak RSS
// (sampled).
// A namespace finalizer stands in for kube-controller-manager, which clusterctl's cert-manager
// probe waits for.
func BenchmarkClusterctlFirstInit(b *testing.B) {
	bin := os.Getenv("CAPCTL_CLUSTERCTL")
	if bin == "" {
		b.Skip("set CAPCTL_CLUSTERCTL to a clusterctl v1.14 binary (make test builds it)")
	}
	fixtures := testenv.FixturesDir(b)
	cfgPath := writeConfigTB(b, fixtures)
	var seconds, rss float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		env := testenv.Start(b, testenv.Options{})
		ctx := testenv.Context(b)
		ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
		home := b.TempDir()
		cmd := exec.CommandContext(ctx, bin, "init", "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0",
			"--kubeconfig", env.Kubeconfig, "--config", cfgPath)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "CLUSTERCTL_DISABLE_VERSIONCHECK=true", "GOPROXY=off")
		before := env.ServedRequests(b)
		standIn := env.Client.Requests()
		b.StartTimer()
		start := time.Now()
		out, peak, err := testenv.RunSampled(cmd)
		seconds += time.Since(start).Seconds()
		b.StopTimer()
		ctl.Stop()
		standIn = env.Client.Requests() - standIn
		if err != nil {
			b.Fatalf("clusterctl init: %v\n%s", err, out)
		}
		rss = max(rss, peak)
		// Without the stand-in controller's own requests.
		b.ReportMetric(float64(env.ServedRequests(b)-before-1-standIn), "served/op")
		env.Stop()
	}
	b.ReportMetric(seconds/float64(b.N), "s/op")
	b.ReportMetric(rss, "peak-RSS-MiB")
}
