package repository

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/variables"
)

var viewProvider = Provider{Name: "docker", Type: provider.InfrastructureProviderType, URL: "https://example.com/releases/latest/infrastructure-components.yaml"}

func TestComponentsWriteSummary(t *testing.T) {
	c := &Components{
		Release:         Release{Provider: viewProvider, Version: "v1.14.0", Contract: "v1beta2"},
		File:            "infrastructure-components.yaml",
		TargetNamespace: "capd-system",
		Variables:       []variables.Variable{{Name: "A", Required: true}, {Name: "B", Default: "x", Nested: true}},
		Images:          []string{"img:1"},
	}
	var b bytes.Buffer
	if err := c.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	want := `Name:               docker
Type:               InfrastructureProvider
URL:                https://example.com/releases/latest/
Version:            v1.14.0
Contract:           v1beta2
File:               infrastructure-components.yaml
TargetNamespace:    capd-system
Variables:
  - A (required)
  - B (default: x, only inside another variable's default)
Images:
  - img:1
`
	if b.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestComponentsWriteObjects(t *testing.T) {
	o := unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "capd-system"}}}
	c := &Components{Release: Release{Provider: viewProvider, Version: "v1.14.0"}, Objects: []unstructured.Unstructured{o, o}}
	var out, errOut bytes.Buffer
	if err := c.WriteObjects(&out, &errOut, ""); err != nil {
		t.Fatal(err)
	}
	doc := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: capd-system\n"
	if out.String() != doc+"---\n"+doc || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
	out.Reset()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := c.WriteObjects(&out, &errOut, path); err != nil {
		t.Fatal(err)
	}
	if want := "Wrote 2 objects of infrastructure-docker v1.14.0 to " + path + "\n"; out.Len() != 0 || errOut.String() != want {
		t.Errorf("stdout %q, stderr %q, want %q", out.String(), errOut.String(), want)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file: %v, %v", fi, err)
	}
}

func TestRenderRepositories(t *testing.T) {
	var b bytes.Buffer
	if err := RenderRepositories(&b, output.Text, []Provider{viewProvider}); err != nil {
		t.Fatal(err)
	}
	want := "NAME     TYPE                     URL                                    FILE\n" +
		"docker   InfrastructureProvider   https://example.com/releases/latest/   infrastructure-components.yaml\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := RenderRepositories(&b, output.YAML, []Provider{viewProvider}); err != nil {
		t.Fatal(err)
	}
	if want := "- File: infrastructure-components.yaml\n  Name: docker\n  ProviderType: InfrastructureProvider\n  URL: https://example.com/releases/latest/\n"; b.String() != want {
		t.Errorf("yaml: %q", b.String())
	}
}

func TestMirrorResultRender(t *testing.T) {
	r := &MirrorResult{
		Dir:         "/m",
		Providers:   []MirroredVersion{{Name: "docker", Type: provider.InfrastructureProviderType, Version: "v1.14.0", Files: []string{"a.yaml", "metadata.yaml"}}},
		CertManager: &MirroredVersion{Name: "cert-manager", Version: "v1.19.1", Files: []string{"cert-manager.yaml"}},
		Config:      "providers: []\n",
	}
	var b bytes.Buffer
	if err := r.Render(&b, output.Text); err != nil {
		t.Fatal(err)
	}
	want := "# Local repository written by capctl repository mirror: /m\n" +
		"#   InfrastructureProvider docker v1.14.0: a.yaml, metadata.yaml\n" +
		"#   cert-manager v1.19.1: cert-manager.yaml\n" +
		"# Add the following to clusterctl.yaml to use it:\nproviders: []\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCacheCleanResultRender(t *testing.T) {
	for _, tc := range []struct {
		r              CacheCleanResult
		label, version string
		want           string
	}{
		{CacheCleanResult{Note: "local repositories are never cached"}, "", "", "local repositories are never cached\n"},
		{CacheCleanResult{Dir: "/c"}, "cluster-api", "", "Nothing cached of cluster-api in /c\n"},
		{CacheCleanResult{Dir: "/c"}, "", "", "Nothing cached in /c\n"},
		{CacheCleanResult{Dir: "/c", Removed: []string{"x"}, Files: 3, Bytes: 3 << 10, SharedWith: []string{"bootstrap-kubeadm"}}, "cluster-api", "v1.14.0",
			"Removed 3 cached files (3.0 KiB) of cluster-api v1.14.0 from /c\nAlso removed for the providers of the same repository: bootstrap-kubeadm\n"},
		{CacheCleanResult{Dir: "/c", Removed: []string{"x"}, Files: 1, Bytes: 12}, "", "", "Removed 1 cached files (12 B) from /c\n"},
		{CacheCleanResult{Dir: "/c", Removed: []string{"x"}, Files: 1, Bytes: 5 << 20}, "", "", "Removed 1 cached files (5.0 MiB) from /c\n"},
	} {
		var b bytes.Buffer
		if err := tc.r.Render(&b, output.Text, tc.label, tc.version); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("got %q, want %q", b.String(), tc.want)
		}
	}
}

func TestCheckTargetNamespace(t *testing.T) {
	if err := CheckTargetNamespace(""); err != nil {
		t.Errorf("empty: %v", err)
	}
	if err := CheckTargetNamespace("capi-system"); err != nil {
		t.Errorf("capi-system: %v", err)
	}
	if err := CheckTargetNamespace("Bad_NS"); err == nil || !strings.HasPrefix(err.Error(), `--target-namespace "Bad_NS": `) {
		t.Errorf("Bad_NS: %v", err)
	}
}
