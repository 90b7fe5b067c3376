package repository

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/userinputtest"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/provider"
)

func TestBuiltinsAndConfigOverrides(t *testing.T) {
	if n := len(BuiltinProviders()); n != 66 {
		t.Errorf("want clusterctl v1.14's 66 built-in providers, got %d", n)
	}
	cfg := loadConfig(t, `providers:
- name: docker
  type: InfrastructureProvider
  url: /repo/infrastructure-docker/latest/infrastructure-components.yaml
- name: my-infra
  type: InfrastructureProvider
  url: /somewhere/infrastructure-my-infra/v1.0.0/infrastructure-components.yaml
`, nil)
	reg, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.List()) != 67 {
		t.Errorf("want 66 built-ins + 1 added, got %d", len(reg.List()))
	}
	d, err := reg.Get("docker", provider.InfrastructureProviderType)
	if err != nil || d.URL != "/repo/infrastructure-docker/latest/infrastructure-components.yaml" {
		t.Errorf("override by name+type: %+v %v", d, err)
	}
	k, err := reg.Get("kubeadm", provider.BootstrapProviderType)
	if err != nil || k.URL != "https://github.com/kubernetes-sigs/cluster-api/releases/latest/bootstrap-components.yaml" {
		t.Errorf("built-in kubeadm: %+v %v", k, err)
	}
	if k.RepositoryURL() != "https://github.com/kubernetes-sigs/cluster-api/releases/latest/" || k.ComponentsFile() != "bootstrap-components.yaml" {
		t.Errorf("url split: %q %q", k.RepositoryURL(), k.ComponentsFile())
	}
	// Sorted by type order, then name.
	l := reg.List()
	for i := 1; i < len(l); i++ {
		a, b := l[i-1], l[i]
		if a.Type.Order() > b.Type.Order() || (a.Type == b.Type && a.Name > b.Name) {
			t.Fatalf("not sorted at %d: %v then %v", i, a, b)
		}
	}
}

func TestUnknownProviderListsClosest(t *testing.T) {
	reg, _ := NewRegistry(nil)
	_, err := reg.Get("dokcer", provider.InfrastructureProviderType)
	var ue *UnknownProviderError
	if !errors.As(err, &ue) || len(ue.Closest) == 0 || ue.Closest[0] != "docker" {
		t.Fatalf("want docker as the closest name, got %v", err)
	}
	_, err = reg.Get("kubeadm", provider.InfrastructureProviderType)
	if err == nil || !strings.Contains(err.Error(), "BootstrapProvider") {
		t.Errorf("a name of another type should be pointed out: %v", err)
	}
	_, err = reg.Get("vsphre", provider.InfrastructureProviderType)
	if err == nil || !strings.Contains(err.Error(), "vsphere") {
		t.Errorf("vsphre: %v", err)
	}
}

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		url, kind, version, file, wantErr string
	}{
		{url: "https://github.com/kubernetes-sigs/cluster-api/releases/latest/core-components.yaml", kind: "github", version: "latest", file: "core-components.yaml"},
		{url: "https://github.com/o/r/releases/v1.2.3/sub/infrastructure-components.yaml", kind: "github", version: "v1.2.3", file: "infrastructure-components.yaml"},
		{url: "https://github.com/o/r/tags/v1.2.3/x.yaml", wantErr: "must look like"},
		{url: "https://example.com/o/r/releases/v1/x.yaml", wantErr: "only GitHub"},
		{url: "/repo/infrastructure-aws/v2.0.0/infrastructure-components.yaml", kind: "local", version: "v2.0.0", file: "infrastructure-components.yaml"},
		{url: "file:///repo/cluster-api/latest/core-components.yaml", kind: "local", version: "latest", file: "core-components.yaml"},
		{url: "/repo/../etc/cluster-api/latest/core-components.yaml", wantErr: "escapes"},
		{url: "file:///repo/cluster-api/../../latest/core-components.yaml", wantErr: "escapes"},
		{url: "relative/cluster-api/latest/core-components.yaml", wantErr: "absolute"},
		{url: "ftp://host/x", wantErr: "not supported"},
	} {
		l, err := parseLocation(tc.url)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: want error %q, got %v", tc.url, tc.wantErr, err)
			}
			continue
		}
		if err != nil || l.kind != tc.kind || l.version != tc.version || l.file != tc.file {
			t.Errorf("%s: %+v %v", tc.url, l, err)
		}
	}
	if _, err := safeJoin("/base", "v1.0.0", "../../etc/passwd"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("safeJoin escape: %v", err)
	}
	if p, err := safeJoin("/base", "v1.0.0", "metadata.yaml"); err != nil || p != filepath.Join("/base", "v1.0.0", "metadata.yaml") {
		t.Errorf("safeJoin: %s %v", p, err)
	}
}

func TestFixtureVersionsLatestPinsContracts(t *testing.T) {
	cfg := fixtureConfig(t, "")
	c := newTestClient(t, cfg, Options{Offline: true})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		t    provider.Type
	}{
		{"cluster-api", provider.CoreProviderType},
		{"kubeadm", provider.BootstrapProviderType},
		{"kubeadm", provider.ControlPlaneProviderType},
		{"docker", provider.InfrastructureProviderType},
	} {
		p, err := c.Provider(tc.name, tc.t)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := c.Versions(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(vs, ",") != "v1.14.0,v1.13.5,v1.13.4,v1.12.11,v1.10.10" {
			t.Errorf("%s versions: %v", p, vs)
		}
		r, err := c.Resolve(ctx, p, "", ResolveOptions{})
		if err != nil || r.Version != "v1.14.0" || r.Contract != "v1beta2" {
			t.Errorf("%s latest: %+v %v", p, r, err)
		}
		r, err = c.Resolve(ctx, p, "v1.10.10", ResolveOptions{})
		if err != nil || r.Version != "v1.10.10" || r.Contract != "v1beta1" {
			t.Errorf("%s v1.10.10: %+v %v", p, r, err)
		}
		r, err = c.Resolve(ctx, p, "1.13.4", ResolveOptions{})
		if err != nil || r.Version != "v1.13.4" || r.Contract != "v1beta2" || r.Series.Minor != 13 {
			t.Errorf("%s 1.13.4: %+v %v", p, r, err)
		}
	}
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	_, err := c.Resolve(ctx, p, "v1.13.9", ResolveOptions{})
	var nf *VersionNotFoundError
	if !errors.As(err, &nf) || nf.Nearest[0] != "v1.13.5" || !strings.Contains(err.Error(), "v1.13.4") {
		t.Errorf("missing version: want nearest v1.13.5, v1.13.4; got %v", err)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Error("VersionNotFoundError should be ErrNotFound")
	}
	if _, err := c.Resolve(ctx, p, "1.2.x", ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "semantic version") {
		t.Errorf("1.2.x: %v", err)
	}
	if _, err := c.GetFile(ctx, p, "v1.14.0", "../../cluster-api/v1.14.0/metadata.yaml"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("file escape: %v", err)
	}
	if _, err := c.GetFile(ctx, p, "../v1.14.0", "metadata.yaml"); !errors.Is(err, ErrPathEscape) {
		t.Errorf("version escape: %v", err)
	}
}

// A local repository with a pre-release, a version missing its series, a v1beta1-only newest
// release, and a version folder without metadata (an unpublished tag).
func TestLatestRules(t *testing.T) {
	base := t.TempDir()
	md := func(series ...string) string {
		s := "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n"
		for _, x := range series {
			s += x + "\n"
		}
		return s
	}
	dir := filepath.Join(base, "infrastructure-foo")
	comp := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: foo-system\n"
	writeTestFile(t, filepath.Join(dir, "v2.0.0-rc.1", "metadata.yaml"), md("- {major: 2, minor: 0, contract: v1beta2}", "- {major: 1, minor: 1, contract: v1beta2}"))
	writeTestFile(t, filepath.Join(dir, "v1.2.0", "infrastructure-components.yaml"), comp) // no metadata: unpublished
	writeTestFile(t, filepath.Join(dir, "v1.1.0", "metadata.yaml"), md("- {major: 1, minor: 1, contract: v1beta2}"))
	writeTestFile(t, filepath.Join(dir, "v1.1.0", "infrastructure-components.yaml"), comp)
	writeTestFile(t, filepath.Join(dir, "v1.0.0", "metadata.yaml"), md("- {major: 0, minor: 9, contract: v1beta2}"))
	cfg := loadConfig(t, "providers:\n- name: foo\n  type: InfrastructureProvider\n  url: "+dir+"/latest/infrastructure-components.yaml\n", nil)
	c := newTestClient(t, cfg, Options{Offline: true})
	ctx := context.Background()
	p, _ := c.Provider("foo", provider.InfrastructureProviderType)
	r, err := c.Resolve(ctx, p, "latest", ResolveOptions{})
	if err != nil || r.Version != "v1.1.0" {
		t.Errorf("latest should skip the pre-release and the unpublished v1.2.0: %+v %v", r, err)
	}
	r, err = c.Resolve(ctx, p, "latest", ResolveOptions{Pre: true})
	if err != nil || r.Version != "v2.0.0-rc.1" {
		t.Errorf("latest with Pre: %+v %v", r, err)
	}
	if _, err := c.Resolve(ctx, p, "v1.0.0", ResolveOptions{}); err == nil || !strings.Contains(err.Error(), "release series") {
		t.Errorf("v1.0.0's series is not in its own metadata: want an error, got %v", err)
	}

	// Newest release implements an old contract only: latest falls back to the newest series
	// implementing v1beta2.
	dir2 := filepath.Join(base, "infrastructure-bar")
	writeTestFile(t, filepath.Join(dir2, "v3.0.0", "metadata.yaml"), md("- {major: 3, minor: 0, contract: v1beta3}", "- {major: 2, minor: 5, contract: v1beta2}"))
	writeTestFile(t, filepath.Join(dir2, "v2.5.1", "metadata.yaml"), md("- {major: 2, minor: 5, contract: v1beta2}"))
	writeTestFile(t, filepath.Join(dir2, "v2.5.0", "metadata.yaml"), md("- {major: 2, minor: 5, contract: v1beta2}"))
	cfg = loadConfig(t, "providers:\n- name: bar\n  type: InfrastructureProvider\n  url: "+dir2+"/latest/infrastructure-components.yaml\n", nil)
	c = newTestClient(t, cfg, Options{Offline: true})
	p, _ = c.Provider("bar", provider.InfrastructureProviderType)
	r, err = c.Resolve(ctx, p, "", ResolveOptions{})
	if err != nil || r.Version != "v2.5.1" || r.Contract != "v1beta2" {
		t.Errorf("latest implementing v1beta2: %+v %v", r, err)
	}

	// Only pre-releases: one is chosen.
	dir3 := filepath.Join(base, "infrastructure-baz")
	writeTestFile(t, filepath.Join(dir3, "v0.1.0-alpha.1", "metadata.yaml"), md("- {major: 0, minor: 1, contract: v1beta2}"))
	cfg = loadConfig(t, "providers:\n- name: baz\n  type: InfrastructureProvider\n  url: "+dir3+"/latest/infrastructure-components.yaml\n", nil)
	c = newTestClient(t, cfg, Options{Offline: true})
	p, _ = c.Provider("baz", provider.InfrastructureProviderType)
	if r, err = c.Resolve(ctx, p, "", ResolveOptions{}); err != nil || r.Version != "v0.1.0-alpha.1" {
		t.Errorf("only pre-releases: %+v %v", r, err)
	}

	// A wrong provider-label folder is refused.
	cfg = loadConfig(t, "providers:\n- name: qux\n  type: InfrastructureProvider\n  url: "+dir3+"/latest/infrastructure-components.yaml\n", nil)
	c = newTestClient(t, cfg, Options{Offline: true})
	p, _ = c.Provider("qux", provider.InfrastructureProviderType)
	if _, err := c.Versions(ctx, p); err == nil || !strings.Contains(err.Error(), "infrastructure-qux") {
		t.Errorf("label mismatch: %v", err)
	}
}

func TestOverridesFolderWins(t *testing.T) {
	ov := t.TempDir()
	cfg := fixtureConfig(t, "overridesFolder: "+ov+"\n")
	writeTestFile(t, filepath.Join(ov, "infrastructure-docker", "v1.14.0", "infrastructure-components.yaml"), "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: overridden\n")
	c := newTestClient(t, cfg, Options{Offline: true})
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	b, err := c.GetFile(context.Background(), p, "v1.14.0", "infrastructure-components.yaml")
	if err != nil || !strings.Contains(string(b), "overridden") {
		t.Fatalf("override not used: %v", err)
	}
	b, err = c.GetFile(context.Background(), p, "v1.14.0", "metadata.yaml")
	if err != nil || !strings.Contains(string(b), "releaseSeries") {
		t.Fatalf("non-overridden file: %v", err)
	}
}

func TestParseMetadataValidation(t *testing.T) {
	for body, want := range map[string]string{
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha2\nreleaseSeries: [{major: 1, minor: 0, contract: v1beta1}]": "apiVersion",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Other\nreleaseSeries: [{major: 1, minor: 0}]":       "kind",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\n":                                         "no releaseSeries",
		"apiVersion: [": "YAML",
		// Errors speak of the file, never of Go types.
		"just a string\n": "is not a YAML mapping",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: one\n  minor: 0\n": "releaseSeries[0].major must be a whole number",
		"apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nreleaseSeries: {}\n":                                        "releaseSeries must be a list",
		htmlPage: "the server returned an HTML page, not metadata.yaml",
	} {
		_, err := ParseMetadata([]byte(body))
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "repository.") || strings.Contains(err.Error(), "int32")) {
			t.Errorf("%q: Go types in %v", body, err)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: want %q, got %v", body, want, err)
		}
	}
}

// TestEndlessLocalFilesAreBounded: an override or a local repository file that is an endless
// stream is read up to the input bound and refused, naming the file; an override that exists
// but cannot be read is never silently replaced by the release.
func TestEndlessLocalFilesAreBounded(t *testing.T) {
	defer userinput.SetMax(userinput.SetMax(1 << 20))
	ov := t.TempDir()
	cfg := fixtureConfig(t, "overridesFolder: "+ov+"\n")
	path := filepath.Join(ov, "infrastructure-docker", "v1.14.0", "infrastructure-components.yaml")
	userinputtest.DevZeroAt(t, path)
	c := newTestClient(t, cfg, Options{Offline: true})
	p, _ := c.Provider("docker", provider.InfrastructureProviderType)
	_, err := c.GetFile(context.Background(), p, "v1.14.0", "infrastructure-components.yaml")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "larger than 1Mi") {
		t.Fatalf("override that is /dev/zero: %v, want a refusal naming %s and the bound", err, path)
	}

	repo := t.TempDir()
	local := filepath.Join(repo, "infrastructure-widget", "v1.0.0", "infrastructure-components.yaml")
	writeTestFile(t, filepath.Join(repo, "infrastructure-widget", "v1.0.0", "metadata.yaml"), "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries: [{major: 1, minor: 0, contract: v1beta2}]\n")
	userinputtest.DevZeroAt(t, local)
	cfg = loadConfig(t, "providers:\n- name: widget\n  type: InfrastructureProvider\n  url: "+local+"\n", nil)
	c = newTestClient(t, cfg, Options{Offline: true})
	p, _ = c.Provider("widget", provider.InfrastructureProviderType)
	_, err = c.GetFile(context.Background(), p, "v1.0.0", "infrastructure-components.yaml")
	if err == nil || !strings.Contains(err.Error(), local) || !strings.Contains(err.Error(), "larger than 1Mi") {
		t.Fatalf("local repository file that is /dev/zero: %v, want a refusal naming %s and the bound", err, local)
	}
}
