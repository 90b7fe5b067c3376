package clusterinit_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
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
		res, err := clusterinit.InitWith(testenv.Context(b), cl, clusterinit.InitRequest{
			StrictChecks: true,
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
	bin := testenv.Clusterctl(b)
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

// BenchmarkInitSideBySide is the figure in one command: the same first init (cert-manager
// CRDs, core, kubeadm bootstrap and control plane, Docker v1.14.0 from the local fixtures
// repository, no wait) by the capctl command and by the reference clusterctl, each as a child
// process into a fresh API server, alternating capctl and clusterctl INIT_BENCH_RUNS times
// (default 3) so that both meet the same load. It logs a table of medians (seconds, requests as
// the server counted them, peak RSS) with the load average, and reports the medians and
// capctl/clusterctl (the goal is ≤ 0.5). Each round also times init's floor (floorApply: the same
// processed objects written at once into a fresh API server, in process) and reports capctl as a
// ratio to it (the goal is ≤ 1.2). Run with `make bench BENCH=InitSideBySide`.
func BenchmarkInitSideBySide(b *testing.B) {
	const floor = "floor"
	bin := testenv.Clusterctl(b)
	runs := 3
	if v := os.Getenv("INIT_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("INIT_BENCH_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	capctl := testenv.BuildCapctl(b)
	fixtures := testenv.FixturesDir(b)
	cfgPath := writeConfigTB(b, fixtures)
	type tool struct {
		name string
		args []string
	}
	providers := []string{"--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0"}
	tools := []tool{
		{"capctl", append([]string{capctl, "init", "--wait-providers=false"}, providers...)},
		{"clusterctl", append([]string{bin, "init"}, providers...)},
	}
	seconds := map[string][]float64{}
	served := map[string][]float64{}
	rss := map[string][]float64{}
	floorObjects := initObjects(b, clientsTB(b, cfgPath, nil))
	var rounds []float64
	loads := []string{testenv.LoadAverage()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < runs; r++ {
			for _, t := range tools {
				b.StopTimer()
				env := testenv.Start(b, testenv.Options{})
				ctx := testenv.Context(b)
				// The namespace controller's part: both probes delete cert-manager-test.
				ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
				home := b.TempDir()
				cmd := exec.CommandContext(ctx, t.args[0], append(append([]string{}, t.args[1:]...), "--kubeconfig", env.Kubeconfig, "--config", cfgPath)...)
				cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "CLUSTERCTL_DISABLE_VERSIONCHECK=true", "GOPROXY=off", "NO_COLOR=1")
				before := env.ServedRequests(b)
				standIn := env.Client.Requests()
				b.StartTimer()
				start := time.Now()
				out, peak, err := testenv.RunSampled(cmd)
				elapsed := time.Since(start).Seconds()
				b.StopTimer()
				ctl.Stop()
				standIn = env.Client.Requests() - standIn
				if err != nil {
					b.Fatalf("%s init: %v\n%s", t.name, err, out)
				}
				seconds[t.name] = append(seconds[t.name], elapsed)
				// Without the stand-in controller's own requests and ServedRequests' own.
				served[t.name] = append(served[t.name], float64(env.ServedRequests(b)-before-1-standIn))
				rss[t.name] = append(rss[t.name], peak)
				env.Stop()
			}
			b.StopTimer()
			env := testenv.Start(b, testenv.Options{})
			c, err := cluster.NewForConfig(env.Config, cluster.Options{}, "", "envtest", "default")
			if err != nil {
				b.Fatal(err)
			}
			before := env.ServedRequests(b)
			b.StartTimer()
			start := time.Now()
			n, err := floorApply(testenv.Context(b), c, floorObjects)
			elapsed := time.Since(start).Seconds()
			b.StopTimer()
			if err != nil {
				b.Fatalf("the floor's apply: %v", err)
			}
			seconds[floor] = append(seconds[floor], elapsed)
			served[floor] = append(served[floor], float64(env.ServedRequests(b)-before-1))
			rounds = append(rounds, float64(n))
			env.Stop()
			loads = append(loads, testenv.LoadAverage())
		}
	}
	med := func(m map[string][]float64, name string) float64 { return testenv.Median(m[name]) }
	b.Logf("first init, cert-manager CRDs + 4 providers v1.14.0, no wait; medians of %d alternating runs; load average (1 5 15 min) before and after each round: %s", runs, strings.Join(loads, " | "))
	b.Logf("%-10s %8s %9s %13s   %s", "tool", "seconds", "requests", "peak RSS MiB", "all seconds")
	for _, t := range tools {
		b.Logf("%-10s %8.2f %9.0f %13.1f   %v", t.name, med(seconds, t.name), med(served, t.name), med(rss, t.name), seconds[t.name])
	}
	b.Logf("%-10s %8.2f %9.0f %13s   %v (%d objects, in process, median %.0f rounds)", floor, med(seconds, floor), med(served, floor), "-", seconds[floor], len(floorObjects), testenv.Median(rounds))
	ratio := med(seconds, "capctl") / med(seconds, "clusterctl")
	b.Logf("capctl/clusterctl time: %.2f (goal ≤ 0.5)", ratio)
	b.Logf("capctl/floor time: %.2f (goal ≤ 1.2); clusterctl/floor: %.2f", med(seconds, "capctl")/med(seconds, floor), med(seconds, "clusterctl")/med(seconds, floor))
	b.ReportMetric(med(seconds, floor), "floor-s")
	b.ReportMetric(med(seconds, "capctl")/med(seconds, floor), "capctl/floor")
	b.ReportMetric(med(seconds, "capctl"), "capctl-s")
	b.ReportMetric(med(seconds, "clusterctl"), "clusterctl-s")
	b.ReportMetric(ratio, "capctl/clusterctl")
	b.ReportMetric(med(served, "capctl"), "capctl-requests")
	b.ReportMetric(med(served, "clusterctl"), "clusterctl-requests")
	b.ReportMetric(med(rss, "capctl"), "capctl-peak-RSS-MiB")
	b.ReportMetric(med(rss, "clusterctl"), "clusterctl-peak-RSS-MiB")
}
