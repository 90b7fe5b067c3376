package clusterinit_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/registrytest"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// BenchmarkInitFromOCI is the same first init (cert-manager CRDs, core, kubeadm bootstrap and
// control plane, Docker v1.14.0, no wait) by the capctl command into a fresh API server, from the
// local repository and from a real registry on loopback (TLS, htpasswd) with an empty download
// cache (cold) and with the cache a first OCI init filled (warm), alternating the three
// OCI_BENCH_RUNS times (default 3). It logs medians of seconds, API requests the server counted
// and peak RSS, and reports OCI/local time for both caches. Run with `make bench BENCH=InitFromOCI`.
func BenchmarkInitFromOCI(b *testing.B) {
	capctl := testenv.BuildCapctl(b)
	reg := registrytest.Start(b)
	b.Setenv("DOCKER_CONFIG", reg.DockerConfig)
	_, localCfg, ociCfg := ociConfigs(b, reg)
	publishFixture(b, testenv.Context(b), localCfg, reg)
	runs := 3
	if v := os.Getenv("OCI_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("OCI_BENCH_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	warmCache := b.TempDir()
	type variant struct {
		name, cfg string
		cache     func() string
	}
	variants := []variant{
		{"local", localCfg, func() string { return b.TempDir() }},
		{"oci-cold", ociCfg, func() string { return b.TempDir() }},
		{"oci-warm", ociCfg, func() string { return warmCache }},
	}
	providers := []string{"init", "--wait-providers=false", "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0"}
	run := func(v variant) (seconds, served, rss float64) {
		env := testenv.Start(b, testenv.Options{})
		defer env.Stop()
		ctx := testenv.Context(b)
		ctl := installtest.Start(ctx, env.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
		home := b.TempDir()
		cmd := exec.CommandContext(ctx, capctl, append(append([]string{}, providers...), "--kubeconfig", env.Kubeconfig, "--config", v.cfg)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+v.cache(), "DOCKER_CONFIG="+reg.DockerConfig, "GOPROXY=off", "NO_COLOR=1")
		before := env.ServedRequests(b)
		standIn := env.Client.Requests()
		start := time.Now()
		out, peak, err := testenv.RunSampled(cmd)
		seconds = time.Since(start).Seconds()
		ctl.Stop()
		if err != nil {
			b.Fatalf("%s init: %v\n%s", v.name, err, out)
		}
		return seconds, float64(env.ServedRequests(b) - before - 1 - (env.Client.Requests() - standIn)), peak
	}
	// Fill the warm cache once.
	run(variant{"fill", ociCfg, func() string { return warmCache }})
	seconds, served, rss := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	loads := []string{testenv.LoadAverage()}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for r := 0; r < runs; r++ {
			for _, v := range variants {
				s, n, p := run(v)
				seconds[v.name] = append(seconds[v.name], s)
				served[v.name] = append(served[v.name], n)
				rss[v.name] = append(rss[v.name], p)
			}
			loads = append(loads, testenv.LoadAverage())
		}
	}
	b.StopTimer()
	med := func(m map[string][]float64, name string) float64 { return testenv.Median(m[name]) }
	b.Logf("first init, cert-manager CRDs + 4 providers v1.14.0, no wait, capctl as a child process; medians of %d alternating runs; load average before and after each round: %s", runs, strings.Join(loads, " | "))
	b.Logf("%-9s %8s %9s %13s   %s", "source", "seconds", "requests", "peak RSS MiB", "all seconds")
	for _, v := range variants {
		b.Logf("%-9s %8.2f %9.0f %13.1f   %v", v.name, med(seconds, v.name), med(served, v.name), med(rss, v.name), seconds[v.name])
	}
	b.ReportMetric(med(seconds, "local"), "local-s")
	b.ReportMetric(med(seconds, "oci-cold"), "oci-cold-s")
	b.ReportMetric(med(seconds, "oci-warm"), "oci-warm-s")
	b.ReportMetric(med(seconds, "oci-cold")/med(seconds, "local"), "cold/local")
	b.ReportMetric(med(seconds, "oci-warm")/med(seconds, "local"), "warm/local")
}
