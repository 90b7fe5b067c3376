package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// The tests come in three tiers, each with its own make target (docs/development.md):
// unit (`go test -short`, no servers), integration (envtest API servers and the reference
// clusterctl) and e2e (live management clusters). A test of a higher tier skips under -short, and
// a test whose prerequisite is missing follows Require.

// InCI reports whether the tests run in CI ($CI is true, as CI systems and .ci/run set it).
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Require is the tests' one prerequisite policy. When ok is false, the test skips, naming what is
// missing and the make target that provides it; under CI=true it fails instead, because there
// `make test` builds every prerequisite first and a skip would hide a broken build. what names the
// missing thing, where it was looked for and any other way to provide it; target is the Makefile
// target (without "make") that builds it, or "" for what no target can provide (the shared
// fixtures).
func Require(tb testing.TB, what, target string, ok bool) {
	tb.Helper()
	if ok {
		return
	}
	msg := "missing " + what
	if target != "" {
		msg += ": run `make " + target + "`"
	}
	if InCI() {
		tb.Fatal(msg + " (CI=true: a missing prerequisite fails the test)")
		return
	}
	tb.Skip(msg)
}

// SkipShort skips the test under -short, the unit tier, saying what the test needs and which make
// target runs its tier. It never fails: -short asks for the unit tier on purpose.
func SkipShort(tb testing.TB, what, target string) {
	tb.Helper()
	if testing.Short() {
		tb.Skipf("%s: run `make %s` (skipped under -short)", what, target)
	}
}

// Integration marks an integration test: it skips under -short, and the envtest binaries
// (kube-apiserver, etcd) must be present (Require).
func Integration(tb testing.TB) {
	tb.Helper()
	SkipShort(tb, "integration test (real kube-apiserver and etcd)", "integration")
	RequireAssets(tb)
}

// RequireAssets applies Require to the envtest binaries in AssetsDir.
func RequireAssets(tb testing.TB) {
	tb.Helper()
	missing := missingAssets()
	Require(tb, fmt.Sprintf("%v in %s (or set KUBEBUILDER_ASSETS)", missing, AssetsDir()), "envtest-bins", len(missing) == 0)
}

func missingAssets() []string {
	var missing []string
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(AssetsDir(), bin)); err != nil {
			missing = append(missing, bin)
		}
	}
	return missing
}

// ClusterctlVersion is the reference clusterctl the compatibility tests run (hack/clusterctl-bin.sh).
const ClusterctlVersion = "v1.14.2"

// Clusterctl returns the reference clusterctl for a compatibility test: $CAPCTL_CLUSTERCTL, else
// where `make clusterctl-bin` puts it. The test is of the integration tier (skips under -short)
// and follows Require when the binary is missing.
func Clusterctl(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, "compatibility test", "the reference clusterctl "+ClusterctlVersion, "CAPCTL_CLUSTERCTL",
		filepath.Join("clusterctl", ClusterctlVersion, "clusterctl"), "clusterctl-bin")
}

// ClusterctlV1Beta1Version is the clusterctl of the v1beta1 contract that the live contract
// tests set up a v1beta1 management cluster with (capctl installs v1beta2 core providers only).
const ClusterctlV1Beta1Version = "v1.10.10"

// ClusterctlV1Beta1 returns that clusterctl: $CAPCTL_CLUSTERCTL_V1BETA1, else where `make
// live-bins` puts it; follows Require when it is missing.
func ClusterctlV1Beta1(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, "contract test", "clusterctl "+ClusterctlV1Beta1Version, "CAPCTL_CLUSTERCTL_V1BETA1",
		filepath.Join("clusterctl", ClusterctlV1Beta1Version, "clusterctl"), "live-bins")
}

// OperatorPluginVersion is the Cluster API Operator whose clusterctl plugin the plugin test runs
// (hack/operator-plugin.sh builds it).
const OperatorPluginVersion = "v0.29.0"

// OperatorPlugin returns the Cluster API Operator's clusterctl-operator binary for the plugin
// test: $CAPCTL_OPERATOR_PLUGIN, else where `make operator-plugin` puts it. Of the integration
// tier (skips under -short); follows Require when the binary is missing.
func OperatorPlugin(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, "plugin test", "the Cluster API Operator's clusterctl-operator "+OperatorPluginVersion, "CAPCTL_OPERATOR_PLUGIN",
		filepath.Join("operator", OperatorPluginVersion, "clusterctl-operator"), "operator-plugin")
}

// RegistryVersion is the OCI registry (CNCF distribution) the OCI repository tests push to and
// read from (hack/registry-bin.sh builds it).
const RegistryVersion = "v3.1.2"

// RegistryBinary returns that registry: $CAPCTL_REGISTRY, else where `make registry-bin` puts it.
// Of the integration tier; follows Require when it is missing.
func RegistryBinary(tb testing.TB) string {
	tb.Helper()
	return cachedBinary(tb, "OCI registry test", "the registry (distribution) "+RegistryVersion, "CAPCTL_REGISTRY",
		filepath.Join("registry", RegistryVersion, "registry"), "registry-bin")
}

// MCPConformanceVersion is the MCP conformance suite the MCP server's tests run (hack/mcp-tools.sh).
const MCPConformanceVersion = "0.1.12"

// MCPTools is the folder holding the MCP conformance suite and the TypeScript SDK
// (node_modules), installed by `make mcp-tools`, and the node binary to run them: of the
// integration tier; a missing Node or folder skips, or fails under CI=true.
func MCPTools(tb testing.TB) (dir, node string) {
	tb.Helper()
	SkipShort(tb, "MCP conformance and external client (Node.js)", "integration")
	node, err := exec.LookPath("node")
	Require(tb, "Node.js (node on PATH) for the MCP conformance suite and the TypeScript client", "", err == nil)
	dir = os.Getenv("CAPCTL_MCP_TOOLS")
	if dir == "" {
		dir = filepath.Join(cacheDir(), "capctl", "npm", "mcp-conformance-"+MCPConformanceVersion)
	}
	_, err = os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	Require(tb, "the MCP conformance suite and TypeScript SDK at "+dir+" (or set CAPCTL_MCP_TOOLS)", "mcp-tools", err == nil)
	return dir, node
}

// cachedBinary is the rule of the tests that run a binary a make target builds into the cache
// (~/.cache/capctl/rel): of the integration tier, $env overrides the path, and Require applies.
func cachedBinary(tb testing.TB, test, what, env, rel, target string) string {
	tb.Helper()
	SkipShort(tb, test+" ("+what+")", "integration")
	bin := os.Getenv(env)
	if bin == "" {
		bin = filepath.Join(cacheDir(), "capctl", rel)
	}
	_, err := os.Stat(bin)
	Require(tb, what+" at "+bin+" (or set "+env+")", target, err == nil)
	return bin
}

func cacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache")
}

var (
	afterMu    sync.Mutex
	afterTests []func()
)

// AfterTests registers f to run when Main's tests have finished (a server that a test started
// lazily for the whole package, for instance).
func AfterTests(f func()) {
	afterMu.Lock()
	defer afterMu.Unlock()
	afterTests = append(afterTests, f)
}

// Main is a package's TestMain. Unless -short or the envtest binaries are missing (each
// integration test then says so through Integration), it starts one API server per pointer in
// shared before the tests: starting one costs seconds of CPU, so a package shares it. After the
// tests it stops them and runs what AfterTests registered, then exits with the tests' code.
func Main(m *testing.M, shared ...**Env) {
	flag.Parse()
	os.Exit(runMain(m, shared))
}

func runMain(m *testing.M, shared []**Env) int {
	defer func() {
		afterMu.Lock()
		fs := afterTests
		afterTests = nil
		afterMu.Unlock()
		for i := len(fs) - 1; i >= 0; i-- {
			fs[i]()
		}
	}()
	if !testing.Short() && len(missingAssets()) == 0 {
		for _, p := range shared {
			e, err := start(Options{})
			if err != nil {
				fmt.Fprintf(os.Stderr, "starting the package's shared test API server: %v\n", err)
				return 1
			}
			*p = e
			AfterTests(e.Stop)
		}
	}
	return m.Run()
}
