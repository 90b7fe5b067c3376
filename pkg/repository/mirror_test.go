package repository

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/provider"
)

func TestCertManagerFromLocalURL(t *testing.T) {
	repo := fixtureRepo(t)
	cfg := loadConfig(t, "cert-manager:\n  url: "+repo+"/cert-manager/latest/cert-manager-crds.yaml\n  version: v1.20.3\n", nil)
	c := newTestClient(t, cfg, Options{Offline: true})
	cm, err := c.CertManagerFile(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ParseYAML(cm.URL, cm.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Version != "v1.20.3" || cm.File != "cert-manager-crds.yaml" || len(objs) < 6 {
		t.Fatalf("%s %s %d objects", cm.Version, cm.File, len(objs))
	}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			t.Errorf("fixture has CRDs only, got %s", o.GetKind())
		}
	}
	if cm, err = c.CertManagerFile(context.Background(), "latest"); err != nil || cm.Version != "v1.21.1" {
		t.Errorf("latest cert-manager: %v", err)
	}
	if _, err := c.CertManagerFile(context.Background(), "v1.99.0"); err == nil || !strings.Contains(err.Error(), "v1.99.0") {
		t.Errorf("missing version: %v", err)
	}
}

func TestMirrorFromGitHubThenUseOffline(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.addFixtureCAPI(fixtureRepo(t))
	gh.releases["cert-manager/cert-manager"] = []fakeRelease{{Tag: "v1.21.1", Assets: []string{"cert-manager.yaml"}}}
	gh.files["cert-manager/cert-manager/v1.21.1/cert-manager.yaml"] = filepath.Join(fixtureRepo(t), "cert-manager", "v1.21.1", "cert-manager-crds.yaml")
	cfg := loadConfig(t, "", nil)
	c := newTestClient(t, cfg, gh.options(""))
	ctx := context.Background()
	var reqs []MirrorRequest
	for _, x := range []struct {
		n string
		t provider.Type
		v string
	}{{"cluster-api", provider.CoreProviderType, "v1.14.0"}, {"kubeadm", provider.BootstrapProviderType, ""}, {"docker", provider.InfrastructureProviderType, "v1.13.5"}} {
		p, err := c.Provider(x.n, x.t)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, MirrorRequest{Provider: p, Version: x.v})
	}
	dir := filepath.Join(t.TempDir(), "mirror")
	res, err := c.Mirror(ctx, dir, reqs, MirrorOptions{CertManager: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		"cluster-api/v1.14.0/core-components.yaml", "cluster-api/v1.14.0/metadata.yaml",
		"bootstrap-kubeadm/v1.14.0/bootstrap-components.yaml", "bootstrap-kubeadm/v1.14.0/metadata.yaml",
		"infrastructure-docker/v1.13.5/infrastructure-components-development.yaml",
		"infrastructure-docker/v1.13.5/cluster-template-development.yaml",
		"infrastructure-docker/v1.13.5/clusterclass-quick-start.yaml",
		"cert-manager/v1.21.1/cert-manager.yaml",
	} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "infrastructure-docker", "v1.13.5", "core-components.yaml")); err == nil {
		t.Error("another provider's components were mirrored into infrastructure-docker")
	}

	// The printed configuration works, with no network at all.
	cfgPath := filepath.Join(t.TempDir(), "clusterctl.yaml")
	body := res.Config + "overridesFolder: " + filepath.Join(t.TempDir(), "none") + "\n"
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var check map[string]any
	if err := yaml.Unmarshal([]byte(res.Config), &check); err != nil {
		t.Fatalf("config fragment is not YAML: %v\n%s", err, res.Config)
	}
	mcfg, err := config.Load(ctx, config.Options{Path: cfgPath, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	before := gh.total()
	off := newTestClient(t, mcfg, Options{Offline: true})
	docker, _ := off.Provider("docker", provider.InfrastructureProviderType)
	r, err := off.Resolve(ctx, docker, "", ResolveOptions{})
	if err != nil || r.Version != "v1.13.5" {
		t.Errorf("mirrored docker latest: %+v %v", r, err)
	}
	if _, err := off.CertManagerFile(ctx, ""); err != nil {
		t.Errorf("mirrored cert-manager: %v", err)
	}
	if gh.total() != before {
		t.Error("using the mirror touched GitHub")
	}
}

func TestListFilesMergesOverrides(t *testing.T) {
	ov := t.TempDir()
	cfg := fixtureConfig(t, "overridesFolder: "+ov+"\n")
	writeTestFile(t, filepath.Join(ov, "infrastructure-docker", "v1.14.0", "cluster-template-mine.yaml"), "kind: X\n")
	c := newTestClient(t, cfg, Options{Offline: true})
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	files, err := c.ListFiles(context.Background(), p, "v1.14.0")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(files, ",")
	for _, want := range []string{"cluster-template-mine.yaml", "cluster-template-development.yaml", "infrastructure-components.yaml", "metadata.yaml"} {
		if !strings.Contains(got, want) {
			t.Errorf("ListFiles lacks %s: %s", want, got)
		}
	}
}
