package bundle_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testing/diagnosetest"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// BenchmarkBundleFleet runs `capctl diagnose bundle -A` (the built binary, as a user runs it)
// over a fleet of 1000 clusters (describetest.Fleet, 37 objects each, on a management API
// server with the four providers and cert-manager, as the diagnose fleet benchmark): seconds,
// requests the server served, the child's peak RSS and the bundle's size (compressed, and
// uncompressed as its manifest counts it), each the median of BUNDLE_BENCH_RUNS (3) runs after
// one warm-up, with the load average. BUNDLE_FLEET_CLUSTERS=N picks another fleet size.
func BenchmarkBundleFleet(b *testing.B) {
	if testing.Short() {
		b.Skip("benchmark: needs a real API server")
	}
	n := envInt(b, "BUNDLE_FLEET_CLUSTERS", 1000)
	runs := envInt(b, "BUNDLE_BENCH_RUNS", 3)
	testenv.FixturesDir(b)
	ctx := context.Background()
	mgmt := testenv.Start(b, testenv.Options{})
	diagnosetest.SeedFleet(ctx, b, mgmt, n, 20, nil)

	bin := testenv.BuildCapctl(b)
	home := b.TempDir()
	out := filepath.Join(home, "bundle.tar.gz")
	b.Run(fmt.Sprintf("clusters=%d/capctl-diagnose-bundle", n), func(b *testing.B) {
		once := func() (seconds, served, peak float64) {
			before := mgmt.ServedRequests(b)
			cmd := exec.Command(bin, "diagnose", "bundle", "-A", "-o", out, "--kubeconfig", mgmt.Kubeconfig)
			cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "NO_COLOR=1")
			start := time.Now()
			text, peak, err := testenv.RunSampled(cmd)
			seconds = time.Since(start).Seconds()
			if err != nil {
				b.Fatalf("%v\n%s", err, text)
			}
			return seconds, float64(mgmt.ServedRequests(b) - before - 1), peak
		}
		once()
		var secs, reqs, rss []float64
		for i := 0; i < runs; i++ {
			s, r, p := once()
			secs, reqs, rss = append(secs, s), append(reqs, r), append(rss, p)
		}
		st, err := os.Stat(out)
		if err != nil {
			b.Fatal(err)
		}
		names, files, _ := read(b, out)
		uncompressed := 0
		for _, f := range files {
			uncompressed += len(f)
		}
		b.ReportMetric(testenv.Median(secs), "s/op")
		b.ReportMetric(testenv.Median(reqs), "served/op")
		b.ReportMetric(testenv.Median(rss), "peak-RSS-MiB")
		b.ReportMetric(float64(st.Size())/1024, "bundle-KiB")
		b.ReportMetric(float64(uncompressed)/(1<<20), "uncompressed-MiB")
		b.Logf("runs %v s, %d files, load %s", secs, len(names), testenv.LoadAverage())
	})
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
