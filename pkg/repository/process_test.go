package repository

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/config"
)

func readFixtureObjects(t *testing.T, rel string) []unstructured.Unstructured {
	t.Helper()
	p := filepath.Join(fixtureRepo(t), rel)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := ParseYAML(p, b)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(objs []unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for i := range objs {
		if objs[i].GetKind() == kind && (name == "" || objs[i].GetName() == name) {
			return &objs[i]
		}
	}
	return nil
}

func TestNamespaceRewriteOnRealDockerComponents(t *testing.T) {
	objs := readFixtureObjects(t, "infrastructure-docker/v1.14.0/infrastructure-components.yaml")
	if ns, err := InspectTargetNamespace(objs); err != nil || ns != "capd-system" {
		t.Fatalf("namespace: %q %v", ns, err)
	}
	objs, err := SetTargetNamespace(objs, "my-capd")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if IsNamespaced(o.GetKind()) && o.GetNamespace() != "my-capd" {
			t.Errorf("%s %s still in %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		if !IsNamespaced(o.GetKind()) && o.GetNamespace() != "" {
			t.Errorf("cluster-scoped %s %s got namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		if v, ok := o.GetAnnotations()[InjectCAAnnotation]; ok && v != "my-capd/capd-serving-cert" {
			t.Errorf("%s %s inject-ca-from %q", o.GetKind(), o.GetName(), v)
		}
	}
	if find(objs, "Namespace", "my-capd") == nil || find(objs, "Namespace", "capd-system") != nil {
		t.Error("Namespace object not renamed")
	}
	crd := find(objs, "CustomResourceDefinition", "devclusters.infrastructure.cluster.x-k8s.io")
	if ns, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace"); ns != "my-capd" {
		t.Errorf("CRD conversion service namespace %q", ns)
	}
	for _, kind := range []string{"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"} {
		wh := find(objs, kind, "")
		whs, _, _ := unstructured.NestedSlice(wh.Object, "webhooks")
		if len(whs) == 0 {
			t.Fatalf("%s has no webhooks", kind)
		}
		for _, w := range whs {
			ns, _, _ := unstructured.NestedString(w.(map[string]any), "clientConfig", "service", "namespace")
			if ns != "my-capd" {
				t.Errorf("%s webhook service namespace %q", kind, ns)
			}
		}
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		b := find(objs, kind, "")
		subs, _, _ := unstructured.NestedSlice(b.Object, "subjects")
		for _, s := range subs {
			if s.(map[string]any)["namespace"] != "my-capd" {
				t.Errorf("%s subject %v", kind, s)
			}
		}
	}
	cert := find(objs, "Certificate", "")
	names, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if len(names) == 0 {
		t.Fatal("certificate has no dnsNames")
	}
	for _, n := range names {
		if strings.Contains(n, "capd-system") || !strings.Contains(n, ".my-capd.") {
			t.Errorf("dnsName %q", n)
		}
	}
}

func TestNamespaceAddedAndDuplicatesRefused(t *testing.T) {
	objs, err := ParseYAML("x.yaml", []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err = SetTargetNamespace(objs, "target")
	if err != nil || len(objs) != 2 || objs[0].GetKind() != "Namespace" || objs[0].GetName() != "target" || objs[1].GetNamespace() != "target" {
		t.Fatalf("%v %v", objs, err)
	}
	objs, _ = ParseYAML("x.yaml", []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n"))
	if _, err := SetTargetNamespace(objs, "t"); err == nil || !strings.Contains(err.Error(), "more than one Namespace") {
		t.Errorf("two namespaces: %v", err)
	}
}

func TestParseYAMLErrorsNameFileAndLine(t *testing.T) {
	text := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\n# comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [unclosed\n"
	_, err := ParseYAML("comp.yaml", []byte(text))
	if err == nil || !strings.Contains(err.Error(), "comp.yaml: line 10") {
		t.Errorf("want comp.yaml: line 10, got %v", err)
	}
	_, err = ParseYAML("page.html", []byte("<html>\n<body>Not Found</body>\n</html>\n"))
	if err == nil || !strings.Contains(err.Error(), "page.html: line 1") {
		t.Errorf("html: %v", err)
	}
	_, err = ParseYAML("c.yaml", []byte("---\nfoo: bar\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "kind") {
		t.Errorf("no kind: %v", err)
	}
	objs, err := ParseYAML("c.yaml", []byte("---\n# only a comment\n---\n\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n"))
	if err != nil || len(objs) != 1 {
		t.Errorf("empty documents: %v %v", objs, err)
	}
}

func TestImageOverridesAndImages(t *testing.T) {
	objs := readFixtureObjects(t, "cluster-api/v1.14.0/core-components.yaml")
	if got := Images(objs); len(got) != 1 || got[0] != "registry.k8s.io/cluster-api/cluster-api-controller:v1.14.0" {
		t.Fatalf("images: %v", got)
	}
	err := ApplyImageOverrides(objs, "cluster-api", map[string]config.ImageOverride{
		"all":                                    {Repository: "myorg.io/local-repo/"},
		"cluster-api":                            {Tag: "v1.14.0-patched"},
		"cluster-api/cluster-api-controller":     {Name: "capi"},
		"infrastructure-docker":                  {Tag: "ignored"},
		"cluster-api/some-other-image-not-there": {Tag: "ignored"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := Images(objs); len(got) != 1 || got[0] != "myorg.io/local-repo/capi:v1.14.0-patched" {
		t.Errorf("overridden: %v", got)
	}
	for in, want := range map[string]string{
		"localhost:5000/foo/bar:1.0":          "new.io/bar:2.0",
		"bar":                                 "new.io/bar:2.0",
		"gcr.io/x/bar@sha256:abc":             "new.io/bar:2.0",
		"registry.k8s.io/x/bar:v1@sha256:abc": "new.io/bar:2.0",
	} {
		if got := parseImage(in).apply(config.ImageOverride{Repository: "new.io", Tag: "2.0"}); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
	if got := parseImage("localhost:5000/foo/bar").apply(config.ImageOverride{Repository: "r.io"}); got != "r.io/bar" {
		t.Errorf("registry port: %s", got)
	}
}

func TestSortForInstallAndLabels(t *testing.T) {
	objs := readFixtureObjects(t, "infrastructure-docker/v1.14.0/infrastructure-components.yaml")
	// Put the Namespace last to see the sort move it.
	objs = append(objs[1:], objs[0])
	SortForInstall(objs)
	AddLabels(objs, "infrastructure-docker")
	if objs[0].GetKind() != "Namespace" {
		t.Errorf("first: %s", objs[0].GetKind())
	}
	if !strings.HasPrefix(objs[1].GetAPIVersion(), "cert-manager.io/") || !strings.HasPrefix(objs[2].GetAPIVersion(), "cert-manager.io/") {
		t.Errorf("cert-manager objects next: %s %s", objs[1].GetKind(), objs[2].GetKind())
	}
	if objs[3].GetKind() != "CustomResourceDefinition" {
		t.Errorf("then file order (CRDs first): %s", objs[3].GetKind())
	}
	for _, o := range objs {
		l := o.GetLabels()
		if v, ok := l[ClusterctlLabel]; !ok || v != "" || l[ProviderLabel] != "infrastructure-docker" {
			t.Errorf("%s %s labels %v", o.GetKind(), o.GetName(), l)
		}
	}
}
