// Package testenv starts real kube-apiserver + etcd pairs (controller-runtime envtest) for
// integration tests, installs CRDs, writes kubeconfig files, and finds the shared fixtures.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/pkg/cluster"
)

// K8sVersion is the Kubernetes version the envtest binaries are built at (hack/envtest-bins.sh).
const K8sVersion = "v1.37.2"

// Env is one running API server.
type Env struct {
	// Config reaches the server as cluster-admin.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the server (context "envtest").
	Kubeconfig string
	// Client is a capctl cluster client connected to the server.
	Client *cluster.Client
	// AuditLog is the API server's audit log (JSON lines) when Options.Audit was set.
	AuditLog string

	env *envtest.Environment
}

// Options configure Start.
type Options struct {
	// CRDPaths are files or folders of CRDs to install before the test starts.
	CRDPaths []string
	// Audit makes the API server write an audit log of every request (Env.AuditLog).
	Audit bool
}

// RepoRoot is the root of the capctl checkout: found from this source file's location, or, in a
// -trimpath build (make sets it, so that a clone in any folder reuses the build cache), where the
// compiled-in file names are import paths, from the working folder up to the module's go.mod. A
// test runs in its package's folder; a program such as hack/livemgmt runs from the checkout.
func RepoRoot() string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/capctl/capctl\n")) {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
}

// AssetsDir is the folder with kube-apiserver, etcd and kubectl: $KUBEBUILDER_ASSETS, else the
// folder hack/envtest-bins.sh fills by default.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	if d := os.Getenv("CAPCTL_ENVTEST_DIR"); d != "" {
		return d
	}
	return filepath.Join(cacheDir(), "capctl", "envtest", K8sVersion)
}

// Start runs a fresh API server for the test and stops it when the test ends. Missing binaries
// skip the test, or fail it under CI=true (Require).
func Start(tb testing.TB, opts Options) *Env {
	tb.Helper()
	RequireAssets(tb)
	e, err := start(opts)
	if err != nil {
		tb.Fatalf("starting a test API server: %v", err)
	}
	tb.Cleanup(func() { e.Stop() })
	return e
}

// StartPair runs two API servers at once (the source and target of a move).
func StartPair(tb testing.TB, opts Options) (*Env, *Env) {
	tb.Helper()
	envs := StartN(tb, 2, opts)
	return envs[0], envs[1]
}

// StartN runs n API servers at once (several management clusters) and stops them when the
// test ends.
func StartN(tb testing.TB, n int, opts Options) []*Env {
	tb.Helper()
	RequireAssets(tb)
	var wg sync.WaitGroup
	envs := make([]*Env, n)
	errs := make([]error, n)
	for i := range envs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			envs[i], errs[i] = start(opts)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, e := range envs {
				if e != nil {
					e.Stop()
				}
			}
			tb.Fatalf("starting test API server %d of %d: %v", i+1, n, err)
		}
	}
	tb.Cleanup(func() {
		for _, e := range envs {
			e.Stop()
		}
	})
	return envs
}

// KubeconfigAs writes a copy of the server's kubeconfig whose context, cluster and user are
// all called name (and current), into a folder of the test: several of them in one KUBECONFIG
// list make a kubeconfig with one context per management cluster, as client-go merges it.
func (e *Env) KubeconfigAs(tb testing.TB, name string) string {
	tb.Helper()
	return KubeconfigFileAs(tb, e.Kubeconfig, name)
}

// KubeconfigFileAs is KubeconfigAs for any kubeconfig file (a live management cluster's): the
// copy's current context, cluster and user are all called name.
func KubeconfigFileAs(tb testing.TB, kubeconfig, name string) string {
	tb.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		tb.Fatal(err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if cur == nil {
		tb.Fatalf("kubeconfig %s has no current context", kubeconfig)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[name] = cfg.Clusters[cur.Cluster]
	out.AuthInfos[name] = cfg.AuthInfos[cur.AuthInfo]
	out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: cur.Namespace}
	out.CurrentContext = name
	path := filepath.Join(tb.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		tb.Fatal(err)
	}
	return path
}

// StartForMain is Start for a TestMain that shares one server across a package's tests; the
// caller must call Stop.
func StartForMain(opts Options) (*Env, error) { return start(opts) }

func start(opts Options) (*Env, error) {
	assets := AssetsDir()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make envtest-bins` (or set KUBEBUILDER_ASSETS)", bin, assets)
		}
	}
	// On a loaded 2-core machine an API server can miss envtest's default 20 s start window: give
	// it longer, and one more try with a fresh etcd, before failing the test.
	var (
		te       *envtest.Environment
		cfg      *rest.Config
		err      error
		auditLog string
	)
	for attempt := 1; attempt <= 2; attempt++ {
		te = &envtest.Environment{
			BinaryAssetsDirectory:    assets,
			CRDDirectoryPaths:        opts.CRDPaths,
			ErrorIfCRDPathMissing:    true,
			ControlPlaneStartTimeout: 2 * time.Minute,
			ControlPlaneStopTimeout:  time.Minute,
			CRDInstallOptions:        CRDInstallOptions(),
		}
		if err = UseServerBinaries(te); err != nil {
			return nil, err
		}
		// The Docker infrastructure provider's Deployment asks for a privileged container.
		te.ControlPlane.GetAPIServer().Configure().Append("allow-privileged", "true")
		if opts.Audit {
			if auditLog, err = configureAudit(te); err != nil {
				return nil, err
			}
		}
		if cfg, err = te.Start(); err == nil {
			break
		}
		_ = te.Stop()
	}
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s (2 attempts): %w", assets, err)
	}
	e := &Env{Config: cfg, env: te, AuditLog: auditLog}
	user, err := te.AddUser(envtest.User{Name: "capctl-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("adding an admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("writing kubeconfig: %w", err)
	}
	dir, err := os.MkdirTemp("", "capctl-envtest-")
	if err != nil {
		e.Stop()
		return nil, err
	}
	e.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(e.Kubeconfig, kc, 0o600); err != nil {
		e.Stop()
		return nil, err
	}
	e.Client, err = cluster.New(cluster.Options{Kubeconfig: e.Kubeconfig})
	if err != nil {
		e.Stop()
		return nil, fmt.Errorf("connecting to the test API server: %w", err)
	}
	if err := waitBootstrapped(e.Client); err != nil {
		e.Stop()
		return nil, err
	}
	return e, nil
}

// waitBootstrapped waits until the API server's own bootstrap has created the default/kubernetes
// Service and Endpoints. A server answers before that; on a slow machine a test's "before"
// snapshot could then miss them and blame what it runs for creating them.
func waitBootstrapped(c *cluster.Client) error {
	key := client.ObjectKey{Namespace: "default", Name: "kubernetes"}
	err := cluster.Poll(context.Background(), 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		if c.Get(ctx, key, &corev1.Service{}) != nil {
			return false, nil
		}
		return c.Get(ctx, key, &corev1.Endpoints{}) == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the test API server to create Service and Endpoints default/kubernetes: %w", err)
	}
	return nil
}

// Stop shuts the server down and removes its kubeconfig.
func (e *Env) Stop() {
	if e.env != nil {
		_ = e.env.Stop()
		e.env = nil
	}
	if e.Kubeconfig != "" {
		_ = os.RemoveAll(filepath.Dir(e.Kubeconfig))
	}
}

// crdServedTimeout bounds the wait for installed CRDs to be served. envtest's default (10 s) is
// missed on the 2-core CI machine when the live tiers run beside the integration tests: a test
// API server then failed to start twice with "waiting for CRDs to appear as API resources".
const crdServedTimeout = 2 * time.Minute

// CRDInstallOptions are the options every CRD install of the tests starts from: the wait for
// the CRDs to be served is long enough for a loaded machine.
func CRDInstallOptions() envtest.CRDInstallOptions {
	return envtest.CRDInstallOptions{MaxTime: crdServedTimeout, PollInterval: 200 * time.Millisecond}
}

// InstallCRDs installs the CRDs found at paths (files or folders) and waits until they are served.
func (e *Env) InstallCRDs(tb testing.TB, paths ...string) {
	tb.Helper()
	opts := CRDInstallOptions()
	opts.Paths, opts.ErrorIfPathMissing = paths, true
	if _, err := envtest.InstallCRDs(e.Config, opts); err != nil {
		tb.Fatalf("installing CRDs from %v: %v", paths, err)
	}
}

// FixturesDir is the folder of upstream Cluster API fixtures (repository/, crds/), the first of:
// $CAPCTL_FIXTURES; ../shared/fixtures beside the checkout, where it has a repository/; the folder
// `make fixtures` (hack/fixtures.sh) builds from the Go module proxy, FixturesCacheDir, once its
// build is complete. Where none is found (a bare clone before `make fixtures`) tests that need it
// skip, saying so, or fail under CI=true (Require).
func FixturesDir(tb testing.TB) string {
	tb.Helper()
	dir, where := findFixtures()
	Require(tb, "the upstream Cluster API fixtures (repository/, crds/): "+where, "fixtures", dir != "")
	return dir
}

// SharedFixturesDir is ../shared/fixtures beside the checkout (it may not exist).
func SharedFixturesDir() string {
	return filepath.Join(RepoRoot(), "..", "shared", "fixtures")
}

// FixturesCacheDir is where hack/fixtures.sh builds the fixtures: $CAPCTL_FIXTURES_CACHE, else
// <user cache>/capctl/fixtures.
func FixturesCacheDir() string {
	if d := os.Getenv("CAPCTL_FIXTURES_CACHE"); d != "" {
		return d
	}
	return filepath.Join(cacheDir(), "capctl", "fixtures")
}

// FixturesBuilt reports whether hack/fixtures.sh finished a build in dir: it writes
// .stamps/complete last, so a killed build is not taken for a complete one.
func FixturesBuilt(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ".stamps", "complete"))
	return err == nil && isDir(filepath.Join(dir, "repository"))
}

// findFixtures returns the fixtures folder, or "" and where it was looked for.
func findFixtures() (dir, where string) {
	if d := os.Getenv("CAPCTL_FIXTURES"); d != "" {
		if isDir(filepath.Join(d, "repository")) {
			return d, ""
		}
		return "", "no repository/ in $CAPCTL_FIXTURES=" + d
	}
	if d := SharedFixturesDir(); isDir(filepath.Join(d, "repository")) {
		return d, ""
	}
	if d := FixturesCacheDir(); FixturesBuilt(d) {
		return d, ""
	}
	return "", fmt.Sprintf("not in %s, nor built in %s (set CAPCTL_FIXTURES to a folder of them)",
		SharedFixturesDir(), FixturesCacheDir())
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// Context returns a context that ends with the test.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	return ctx
}

// CreateNamespaces creates the namespaces (no error if they exist).
func (e *Env) CreateNamespaces(tb testing.TB, names ...string) {
	tb.Helper()
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if err := e.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
			tb.Fatalf("creating namespace %s: %v", n, err)
		}
	}
}

// CreateFromFile creates every object of a multi-document YAML (or JSON) file, failing the test
// on the first object the server refuses.
func CreateFromFile(tb testing.TB, c client.Client, path string) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			tb.Fatalf("decoding %s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if err := c.Create(context.Background(), u); err != nil {
			tb.Fatalf("creating %s %s from %s: %v", u.GetKind(), u.GetName(), path, err)
		}
	}
}
