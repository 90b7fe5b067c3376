package clusterinit_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/registrytest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// TestInitFromOCIIsInitFromLocal publishes the fixture repository's providers and cert-manager
// to a real registry (TLS with the test's CA, htpasswd, the credential in a Docker config), then
// initialises one API server from the local repository and another from the registry alone (the
// local repository deleted, GitHub and the Go proxy unreachable, no download cache): every
// installed object is the same.
func TestInitFromOCIIsInitFromLocal(t *testing.T) {
	testenv.Integration(t)
	reg := registrytest.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig)
	t.Setenv("GOPROXY", "off")
	ctx := testenv.Context(t)

	// A copy of the fixture repository, deleted before the init from the registry.
	repoDir, localCfg, ociCfg := ociConfigs(t, reg)
	published := publishFixture(t, ctx, localCfg, reg)

	ref, ours := testenv.StartPair(t, testenv.Options{})
	for _, e := range []*testenv.Env{ref, ours} {
		ctl := installtest.Start(ctx, e.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
		defer ctl.Stop()
	}
	sel := clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"}, ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}}
	if _, err := clusterinit.InitWith(ctx, clientsFor(t, localCfg, ref, true), clusterinit.InitRequest{StrictChecks: true, Selection: sel}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(repoDir); err != nil {
		t.Fatal(err)
	}
	// An infrastructure provider whose URL names another provider's artifacts is refused before
	// anything is installed.
	data, err := os.ReadFile(ociCfg)
	if err != nil {
		t.Fatal(err)
	}
	wrongCfg := writeFile(t, "wrong.yaml", strings.Replace(string(data), "{name: docker, type: InfrastructureProvider", "{name: aws, type: InfrastructureProvider", 1))
	wrongSel := sel
	wrongSel.Infrastructure = []string{"aws:v1.14.0"}
	_, err = clusterinit.InitWith(ctx, clientsFor(t, wrongCfg, ours, false), clusterinit.InitRequest{StrictChecks: true, Selection: wrongSel})
	if err == nil || !strings.Contains(err.Error(), repository.OCIAnnotationProviderName+"=docker") || !strings.Contains(err.Error(), "infrastructure-aws") {
		t.Fatalf("init from another provider's artifact: %v", err)
	}
	if _, err := inventory.List(ctx, ours.Client); !errors.Is(err, inventory.ErrNoInventory) {
		t.Fatalf("the refused init wrote to the cluster: inventory %v", err)
	}
	if crds := snapshot(t, ctx, ours.Client, objectGroups[1].gvk, true); len(crds) != 0 {
		t.Fatalf("the refused init installed %d CRDs", len(crds))
	}
	if _, err := clusterinit.InitWith(ctx, clientsFor(t, ociCfg, ours, false), clusterinit.InitRequest{StrictChecks: true, Selection: sel}); err != nil {
		t.Fatalf("init from the registry: %v", err)
	}
	// Each inventory entry written from the registry names the artifact installed, by digest.
	installed, err := inventory.List(ctx, ours.Client)
	if err != nil || len(installed) != 4 {
		t.Fatalf("inventory %v %v", installed, err)
	}
	for _, p := range installed {
		want := ""
		for _, m := range published.Providers {
			if m.Name == p.ProviderName && m.Type == p.Type {
				want = strings.TrimSuffix(m.Dir, ":"+m.Version) + "@" + m.Digest
			}
		}
		if want == "" || p.Artifact != want {
			t.Errorf("inventory entry %s records artifact %q, want %q", p.ManifestLabel(), p.Artifact, want)
		}
	}
	for _, g := range objectGroups {
		want := snapshot(t, ctx, ref.Client, g.gvk, g.all)
		got := snapshot(t, ctx, ours.Client, g.gvk, g.all)
		if g.gvk == inventory.GVK {
			for _, o := range got { // checked above; the rest must be the local init's
				unstructured.RemoveNestedField(o, "metadata", "annotations", inventory.ArtifactAnnotation)
				if a, _, _ := unstructured.NestedMap(o, "metadata", "annotations"); len(a) == 0 {
					unstructured.RemoveNestedField(o, "metadata", "annotations")
				}
			}
		}
		if len(want) == 0 {
			t.Errorf("%s: the local init installed none; the comparison would prove nothing", g.name)
		}
		for _, d := range diffSnapshots("the local repository", "the registry", want, got) {
			t.Errorf("%s: %s", g.name, d)
		}
	}
}

// ociConfigs copies the fixture repository and writes two configurations naming the same
// providers (v1.14.0) and cert-manager: one from that copy, one from reg's project capi.
func ociConfigs(tb testing.TB, reg *registrytest.Registry) (repoDir, localCfg, ociCfg string) {
	tb.Helper()
	repoDir = filepath.Join(tb.TempDir(), "repository")
	if out, err := exec.Command("cp", "-r", filepath.Join(testenv.FixturesDir(tb), "repository"), repoDir).CombinedOutput(); err != nil {
		tb.Fatalf("copying the fixture repository: %v\n%s", err, out)
	}
	common := fmt.Sprintf("overridesFolder: %s\n%s: %s\ncert-manager:\n  url: %%s\n  version: v1.21.1\n  timeout: 30s\n", filepath.Join(tb.TempDir(), "overrides"), repository.OCICAFileKey, reg.CAFile)
	localCfg = writeFile(tb, "local.yaml", fmt.Sprintf(common, filepath.Join(repoDir, "cert-manager", "v1.21.1", "cert-manager-crds.yaml"))+`providers:
- {name: cluster-api, type: CoreProvider, url: `+repoDir+`/cluster-api/latest/core-components.yaml}
- {name: kubeadm, type: BootstrapProvider, url: `+repoDir+`/bootstrap-kubeadm/latest/bootstrap-components.yaml}
- {name: kubeadm, type: ControlPlaneProvider, url: `+repoDir+`/control-plane-kubeadm/latest/control-plane-components.yaml}
- {name: docker, type: InfrastructureProvider, url: `+repoDir+`/infrastructure-docker/latest/infrastructure-components.yaml}
`)
	oci := "oci://" + reg.Host + "/capi/manifests/"
	ociCfg = writeFile(tb, "oci.yaml", fmt.Sprintf(common, oci+"cert-manager")+`providers:
- {name: cluster-api, type: CoreProvider, url: `+oci+`core-cluster-api}
- {name: kubeadm, type: BootstrapProvider, url: `+oci+`bootstrap-kubeadm}
- {name: kubeadm, type: ControlPlaneProvider, url: `+oci+`control-plane-kubeadm}
- {name: docker, type: InfrastructureProvider, url: `+oci+`infrastructure-docker}
`)
	return repoDir, localCfg, ociCfg
}

// publishFixture publishes the four providers (v1.14.0) and cert-manager of localCfg to reg's
// project capi, as `capctl repository mirror --to oci://HOST/capi` does.
func publishFixture(tb testing.TB, ctx context.Context, localCfg string, reg *registrytest.Registry) *repository.MirrorResult {
	tb.Helper()
	local := clientsFor(tb, localCfg, nil, true)
	var reqs []repository.MirrorRequest
	for _, p := range []struct {
		name string
		t    provider.Type
	}{{"cluster-api", provider.CoreProviderType}, {"kubeadm", provider.BootstrapProviderType}, {"kubeadm", provider.ControlPlaneProviderType}, {"docker", provider.InfrastructureProviderType}} {
		rp, err := local.Repo.Provider(p.name, p.t)
		if err != nil {
			tb.Fatal(err)
		}
		reqs = append(reqs, repository.MirrorRequest{Provider: rp, Version: "v1.14.0"})
	}
	res, err := local.Repo.Mirror(ctx, "oci://"+reg.Host+"/capi", reqs, repository.MirrorOptions{CertManager: true})
	if err != nil {
		tb.Fatal(err)
	}
	for _, m := range append(res.Providers, *res.CertManager) {
		tb.Logf("published %s@%s (%s)", m.Dir, m.Digest, m.Files)
	}
	return res
}

// clientsFor builds init's clients from a config file: offline (the local repository), or online
// with GitHub at a closed loopback port, so only the registry can answer. No download cache.
func clientsFor(t testing.TB, cfgPath string, e *testenv.Env, offline bool) clusterinit.Clients {
	t.Helper()
	cfg, err := config.Load(context.Background(), config.Options{Path: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := repository.New(cfg, repository.Options{CacheDir: "-", Offline: offline, GoProxy: "off",
		GitHubAPIURL: "https://127.0.0.1:1/", GitHubDownloadURL: "https://127.0.0.1:1", RetryAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	cl := clusterinit.Clients{Repo: repo, Config: cfg}
	if e != nil {
		if cl.Cluster, err = cluster.NewForConfig(e.Config, cluster.Options{}, "", "envtest", "default"); err != nil {
			t.Fatal(err)
		}
	}
	return cl
}

func writeFile(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
