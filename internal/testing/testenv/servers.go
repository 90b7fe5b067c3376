package testenv

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/internal/output"
)

// ServerGOGC is the Go garbage collector's target for the servers the tests start (etcd,
// kube-apiserver, kube-controller-manager, the live harness's managers). Those servers spend
// about a quarter of their CPU collecting at the default of 100, and on a 2-core machine the
// test tiers are bound by that CPU: at 400 a live quick start took 22% less CPU (61 → 47.5
// CPU-s, docs/development.md) for about half a gigabyte more peak memory per API server.
// capctl, clusterctl and the test binaries keep the default, so memory figures stay the user's.
const ServerGOGC = "400"

// ServerGOMAXPROCS is how many threads run each test server's Go code at once. At Go's default
// (one per core) a mostly idle server wakes a second thread to look for work whenever a timer or
// a request readies a goroutine; the tests run many such servers on 2 cores, so those wake-ups
// are spent many times over. One live management cluster (its servers and managers), two runs
// each: init, one workload cluster brought up and a minute idle took 35.3 CPU-s instead of
// 40.8, the workload cluster Available after the same 55 s.
const ServerGOMAXPROCS = "1"

// ServerEnv is env with the servers' runtime settings added (ServerGOGC, ServerGOMAXPROCS), for
// a server process the tests start themselves.
func ServerEnv(env []string) []string {
	return append(env, "GOGC="+ServerGOGC, "GOMAXPROCS="+ServerGOMAXPROCS)
}

// UseServerBinaries points te's etcd and kube-apiserver at launchers that start them with
// ServerEnv's settings: envtest starts them with the test process's own environment, where a
// GOGC would also reach every capctl and clusterctl the tests run. Each launcher execs its
// server, so the process keeps its pid and its command line names the real binary.
func UseServerBinaries(te *envtest.Environment) error {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("capctl-test-servers-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("the test servers' launchers: %w", err)
	}
	launcher := func(bin string) (string, error) {
		real := filepath.Join(AssetsDir(), bin)
		// Named by the asset folder too: clones with other assets share the temporary folder.
		h := fnv.New32a()
		_, _ = h.Write([]byte(real))
		path := filepath.Join(dir, fmt.Sprintf("%s-%x", bin, h.Sum32()))
		body := fmt.Sprintf("#!/bin/sh\nGOGC=%s GOMAXPROCS=%s exec '%s' \"$@\"\n", ServerGOGC, ServerGOMAXPROCS,
			strings.ReplaceAll(real, "'", `'\''`))
		if b, err := os.ReadFile(path); err == nil && string(b) == body {
			return path, nil
		}
		// Whole or not at all: test binaries running side by side share the folder.
		return path, output.WriteFileAtomic(path, []byte(body), 0o700)
	}
	etcd, err := launcher("etcd")
	if err != nil {
		return fmt.Errorf("the etcd launcher: %w", err)
	}
	api, err := launcher("kube-apiserver")
	if err != nil {
		return fmt.Errorf("the kube-apiserver launcher: %w", err)
	}
	if te.ControlPlane.Etcd == nil {
		te.ControlPlane.Etcd = &envtest.Etcd{}
	}
	te.ControlPlane.Etcd.Path = etcd
	te.ControlPlane.GetAPIServer().Path = api
	return nil
}
