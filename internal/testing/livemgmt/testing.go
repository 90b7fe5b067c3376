package livemgmt

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// ManagerVersions are the manager sets hack/live-bins.sh builds by default (CAPI_SETS): the
// fixtures' v1.14.0 components run on v1.14.2 managers, v1.13.4/v1.13.5 on v1.13.5 ones.
var ManagerVersions = []string{"v1.14.2", "v1.13.5"}

// RequireBinaries applies the tests' one prerequisite rule (testenv.Require) to the live
// binaries: skip with the make target locally, fail under CI=true.
func RequireBinaries(tb testing.TB, versions ...string) {
	tb.Helper()
	missing := Missing(versions...)
	testenv.Require(tb, fmt.Sprintf("live management cluster binaries %v", missing), "live-bins", len(missing) == 0)
}

// Start runs n live management clusters for a test (waiting while the program already runs as
// many as the machine's budget allows, see Capacity), named mgmt-1..n, stopped when the test ends
// (and on Ctrl-C or SIGTERM). When the test failed, their logs are kept and their folder named.
// versions are the manager sets the test needs (default: v1.14.2).
func Start(tb testing.TB, n int, versions ...string) (*Host, []*Cluster) {
	tb.Helper()
	testenv.SkipShort(tb, "end-to-end test: starts live management clusters", "e2e")
	if len(versions) == 0 {
		versions = ManagerVersions[:1]
	}
	RequireBinaries(tb, versions...)
	if err := budget.acquire(tb, n); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { budget.release(n) })
	h, err := NewHost(Options{Logf: tb.Logf})
	if err != nil {
		tb.Fatal(err)
	}
	stopOnSignal(h)
	tb.Cleanup(func() {
		h.Stop()
		unregister(h)
		if tb.Failed() || os.Getenv("LIVEMGMT_KEEP") != "" {
			tb.Logf("live management cluster logs kept in %s", h.Dir)
			return
		}
		_ = os.RemoveAll(h.Dir)
	})
	clusters, err := h.StartClusters(context.Background(), n)
	if err != nil {
		tb.Fatal(err)
	}
	return h, clusters
}

// StartClusters starts n management clusters (mgmt-1..n) at once.
func (h *Host) StartClusters(ctx context.Context, n int) ([]*Cluster, error) {
	out := make([]*Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = h.StartCluster(ctx, fmt.Sprintf("mgmt-%d", i+1))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// The first cluster is CAPD's home until MoveCAPD says otherwise.
	h.mu.Lock()
	if h.capd.home == nil && n > 0 {
		h.capd.home = out[0]
	}
	h.mu.Unlock()
	return out, nil
}

var (
	sigMu    sync.Mutex
	sigHosts = map[*Host]bool{}
	sigOnce  sync.Once
)

// stopOnSignal stops the host's processes when the program gets SIGINT or SIGTERM (their own
// process groups do not get a terminal's Ctrl-C), then exits.
func stopOnSignal(h *Host) {
	sigMu.Lock()
	sigHosts[h] = true
	sigMu.Unlock()
	sigOnce.Do(func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		go func() {
			s := <-ch
			sigMu.Lock()
			for h := range sigHosts {
				fmt.Fprintf(os.Stderr, "livemgmt: %s: stopping the live management clusters (logs in %s)\n", s, h.Dir)
				h.Stop()
			}
			sigMu.Unlock()
			os.Exit(130)
		}()
	})
}

func unregister(h *Host) {
	sigMu.Lock()
	delete(sigHosts, h)
	sigMu.Unlock()
}

// StopOnSignal is stopOnSignal for programs (the demo) that own a Host.
func StopOnSignal(h *Host) { stopOnSignal(h) }

// WriteConfig writes a clusterctl.yaml into dir whose providers (core, kubeadm bootstrap and
// control plane, docker) and cert-manager come from the fixtures' repository, and returns its
// path.
func WriteConfig(dir, fixtures string) (string, error) {
	repo := filepath.Join(fixtures, "repository")
	body := fmt.Sprintf("overridesFolder: %s\ncert-manager:\n  url: %s\n  version: v1.21.1\nproviders:\n",
		filepath.Join(dir, "overrides"), filepath.Join(repo, "cert-manager", "v1.21.1", "cert-manager-crds.yaml"))
	for _, p := range []struct{ name, typ, label, file string }{
		{"cluster-api", "CoreProvider", LabelCore, "core-components.yaml"},
		{"kubeadm", "BootstrapProvider", LabelBootstrap, "bootstrap-components.yaml"},
		{"kubeadm", "ControlPlaneProvider", LabelControlPlane, "control-plane-components.yaml"},
		{"docker", "InfrastructureProvider", LabelDocker, "infrastructure-components.yaml"},
	} {
		body += fmt.Sprintf("- name: %s\n  type: %s\n  url: %s\n", p.name, p.typ, filepath.Join(repo, p.label, "latest", p.file))
	}
	path := filepath.Join(dir, "clusterctl.yaml")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(body), 0o600)
}

// Capacity is how many live management clusters one program runs at once: each takes about a
// gigabyte (etcd, kube-apiserver, kube-controller-manager and four managers) and some CPU even
// when idle, so the budget is the smaller of MemAvailable/1.5 GiB and 3 per core, at least 1.
// LIVEMGMT_MAX_CLUSTERS overrides it. Tests that share a network (no namespaces) run one at a
// time anyway, since they wait for the host's one CAPD.
func Capacity() int {
	if v, err := strconv.Atoi(os.Getenv("LIVEMGMT_MAX_CLUSTERS")); err == nil && v > 0 {
		return v
	}
	n := 3 * runtime.NumCPU()
	if avail := memAvailable(); avail > 0 {
		n = min(n, int(avail/(1536<<20)))
	}
	return max(n, 1)
}

// memAvailable is /proc/meminfo's MemAvailable in bytes (0 if unknown).
func memAvailable() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// clusterBudget hands out management-cluster slots to the tests of one program.
type clusterBudget struct {
	once sync.Once
	sem  *semaphore.Weighted
	cap  int
}

var budget clusterBudget

func (b *clusterBudget) acquire(tb testing.TB, n int) error {
	b.once.Do(func() { b.cap = Capacity(); b.sem = semaphore.NewWeighted(int64(b.cap)) })
	if n > b.cap {
		n = b.cap // a test larger than the budget runs alone
	}
	start := time.Now()
	if err := b.sem.Acquire(context.Background(), int64(n)); err != nil {
		return err
	}
	if d := time.Since(start); d > time.Second {
		tb.Logf("waited %s for %d of the %d live management cluster slots", d.Round(time.Second), n, b.cap)
	}
	return nil
}

func (b *clusterBudget) release(n int) {
	b.sem.Release(int64(min(n, b.cap)))
}

// testStartup is how long the in-memory backend pretends a VM takes to boot, and its node, API
// server and etcd to start, in the tests' ClusterClass (the upstream one says 10s and 2s each):
// shorter, so that tests spend their time on what capctl does rather than on simulated boots.
var testStartup = map[string]string{`startupDuration: "10s"`: `startupDuration: "3s"`, `startupDuration: "2s"`: `startupDuration: "1s"`}

// WriteTestOverrides writes into the overrides folder of a config from WriteConfig (dir is the
// folder given to WriteConfig) the in-memory ClusterClass of every CAPD version in the
// fixtures with shorter simulated start-up times, so `generate cluster --flavor in-memory`
// gives tests a faster ClusterClass. The demo keeps the upstream one, as a user gets it.
func WriteTestOverrides(dir, fixtures string) error {
	versions, err := filepath.Glob(filepath.Join(fixtures, "repository", LabelDocker, "v*", "clusterclass-in-memory.yaml"))
	if err != nil {
		return err
	}
	for _, src := range versions {
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		body := string(b)
		for from, to := range testStartup {
			body = strings.ReplaceAll(body, from, to)
		}
		version := filepath.Base(filepath.Dir(src))
		out := filepath.Join(dir, "overrides", LabelDocker, version, "clusterclass-in-memory.yaml")
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(out, []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}
