package upgrade

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/capctl/capctl/internal/testing/registrytest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// catalogOf is an online repository catalog of a configuration (no download cache): each call a
// new run, which reads the registry's tags and manifests again.
func catalogOf(t *testing.T, body string) RepositoryCatalog {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(p, []byte("overridesFolder: "+filepath.Join(t.TempDir(), "overrides")+"\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(context.Background(), config.Options{Path: p, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := repository.New(cfg, repository.Options{CacheDir: "-", GoProxy: "off", RetryAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return RepositoryCatalog{Client: rc}
}

// TestProviderPlanFilePinsOCIArtifacts: a providers' plan saved with providers read from a real
// registry names each new version's artifact by digest; applied unchanged it passes its checks
// (dry run); after the version's tag is moved to other content, apply --plan is refused before
// any write, naming both digests, and the inventory is as it was.
func TestProviderPlanFilePinsOCIArtifacts(t *testing.T) {
	testenv.Integration(t)
	reg := registrytest.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig)
	ctx := testenv.Context(t)
	root := filepath.Join(testenv.FixturesDir(t), "repository")
	trust := repository.OCICAFileKey + ": " + reg.CAFile + "\n"
	local := catalogOf(t, trust+"providers:\n"+
		"- {name: cluster-api, type: CoreProvider, url: "+root+"/cluster-api/latest/core-components.yaml}\n"+
		"- {name: docker, type: InfrastructureProvider, url: "+root+"/infrastructure-docker/latest/infrastructure-components.yaml}\n")
	var reqs []repository.MirrorRequest
	for _, p := range []struct {
		name string
		t    provider.Type
	}{{"cluster-api", provider.CoreProviderType}, {"docker", provider.InfrastructureProviderType}} {
		rp, err := local.Client.Provider(p.name, p.t)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"v1.13.5", "v1.14.0"} {
			reqs = append(reqs, repository.MirrorRequest{Provider: rp, Version: v})
		}
	}
	if _, err := local.Client.Mirror(ctx, "oci://"+reg.Host+"/capi", reqs, repository.MirrorOptions{}); err != nil {
		t.Fatal(err)
	}
	// The same docker v1.14.0 in the other layout: other content under the same version.
	other, err := local.Client.Mirror(ctx, "oci://"+reg.Host+"/other", reqs[3:], repository.MirrorOptions{Layout: repository.LayoutOperator})
	if err != nil {
		t.Fatal(err)
	}
	oci := trust + "providers:\n" +
		"- {name: cluster-api, type: CoreProvider, url: oci://" + reg.Host + "/capi/manifests/core-cluster-api}\n" +
		"- {name: docker, type: InfrastructureProvider, url: oci://" + reg.Host + "/capi/manifests/infrastructure-docker}\n"

	env := testenv.Start(t, testenv.Options{CRDPaths: []string{filepath.Join(root, "cert-manager", "v1.21.1", "cert-manager-crds.yaml")}})
	c := env.Client
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		t.Fatal(err)
	}
	// v1.13.5 of both installed from the registry, as init does.
	cat := catalogOf(t, oci)
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, "v1.13.5", "capi-system"),
		inventory.New("docker", provider.InfrastructureProviderType, "v1.13.5", "capd-system"),
	} {
		objs, err := cat.Components(ctx, p, p.Version, p.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{}); err != nil {
			t.Fatal(err)
		}
		if p.Artifact, err = cat.Artifact(ctx, p, p.Version); err != nil || p.Artifact == "" {
			t.Fatalf("artifact of %s: %q %v", p.ManifestLabel(), p.Artifact, err)
		}
		if err := inventory.Write(ctx, c, p); err != nil {
			t.Fatal(err)
		}
	}

	plan, err := Plan(ctx, c, cat)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "providers-plan.json")
	pf, err := SavePlanFile(ctx, cat, plan, path)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("plan file %v %v", st, err)
	}
	if len(pf.Providers) != 2 {
		t.Fatalf("planned %+v", pf.Providers)
	}
	var planned string
	for _, p := range pf.Providers {
		if p.From != "v1.13.5" || p.To != "v1.14.0" || !strings.HasPrefix(p.Artifact, reg.Host+"/capi/manifests/") || !strings.Contains(p.Artifact, "@sha256:") {
			t.Errorf("planned %+v", p)
		}
		if p.Type == provider.InfrastructureProviderType {
			planned = p.Artifact
		}
	}
	loaded, err := LoadPlanFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}

	// Unchanged, the plan passes its checks (a dry run writes nothing).
	if _, err := apply(ctx, c, catalogOf(t, oci), loaded.Request(), ApplyOptions{DryRun: true, Plan: loaded, PlanPath: path}); err != nil {
		t.Fatalf("the unchanged plan: %v", err)
	}

	// Someone moves docker's v1.14.0 tag to the other artifact.
	src, err := remote.NewRepository(reg.Host + "/other/manifests/infrastructure-docker")
	if err != nil {
		t.Fatal(err)
	}
	dst, err := remote.NewRepository(reg.Host + "/capi/manifests/infrastructure-docker")
	if err != nil {
		t.Fatal(err)
	}
	hc := reg.HTTPClient(t)
	for _, r := range []*remote.Repository{src, dst} {
		r.Client = &auth.Client{Client: hc, Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.User, Password: reg.Password})}
	}
	if _, err := oras.Copy(ctx, src, "v1.14.0", dst, "v1.14.0", oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
	moved := reg.Host + "/capi/manifests/infrastructure-docker@" + other.Providers[0].Digest

	_, err = apply(ctx, c, catalogOf(t, oci), loaded.Request(), ApplyOptions{Plan: loaded, PlanPath: path})
	var drift *PlanDriftError
	if !errors.As(err, &drift) || !strings.Contains(err.Error(), planned) || !strings.Contains(err.Error(), moved) || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("apply --plan after the tag moved: %v\nwant both %s and %s", err, planned, moved)
	}
	after, err := inventory.List(ctx, env.Client)
	if err != nil || len(after) != 2 || after[0].Version != "v1.13.5" || after[1].Version != "v1.13.5" {
		t.Fatalf("the inventory changed: %+v %v", after, err)
	}

	// An edited plan is refused.
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"to": "v1.14.0"`, `"to": "v1.14.1"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPlanFile(ctx, path); err == nil || !strings.Contains(err.Error(), "was edited after it was saved") {
		t.Fatalf("edited plan: %v", err)
	}
}
