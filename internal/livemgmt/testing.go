package livemgmt

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// ManagerVersions are the manager sets hack/live-bins.sh builds by default (CAPI_SETS): the
// fixtures' v1.14.0 components run on v1.14.2 managers, v1.13.4/v1.13.5 on v1.13.5 ones.
var ManagerVersions = []string{"v1.14.2", "v1.13.5"}

// RequireBinaries skips the test when binaries are missing outside CI, and fails it in CI
// (CI=true), where `make test` builds them first and a skip would hide a broken build.
func RequireBinaries(tb testing.TB, versions ...string) {
	tb.Helper()
	missing := Missing(versions...)
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("live management cluster binaries missing (%v): run `make live-bins` (several minutes once)", missing)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// Start runs n live management clusters for a test, named mgmt-1..n, stopped when the test ends
// (and on Ctrl-C or SIGTERM). When the test failed, their logs are kept and their folder named.
// versions are the manager sets the test needs (default: v1.14.2).
func Start(tb testing.TB, n int, versions ...string) (*Host, []*Cluster) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("end-to-end test: starts live management clusters")
	}
	if len(versions) == 0 {
		versions = ManagerVersions[:1]
	}
	RequireBinaries(tb, versions...)
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
