package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/templates"
)

// noCluster makes sure no kubeconfig is found, so the commands work without a management cluster.
func noCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
}

func goldenFile(t *testing.T, version, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pkg", "templates", "testdata", "golden", version, file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGenerateClusterFromProviderRepository(t *testing.T) {
	cfg := repoTestConfig(t, "")
	noCluster(t)
	args := []string{"generate", "cluster", "golden", "--config", cfg, "-i", "docker:v1.14.0", "--flavor", "development",
		"--kubernetes-version", "v1.34.1", "-n", "team-a", "--control-plane-machine-count", "3", "--worker-machine-count", "2",
		"--set", "POD_SECURITY_STANDARD_ENABLED=false"}
	out, errOut, code := runCapctl(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := goldenFile(t, "v1.14.0", "cluster-template-development.yaml"); out != want {
		t.Errorf("output differs from the reviewed golden file:\n%s", out)
	}

	// The same from a values file and the environment; precedence --set > --values > env > config.
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("POD_SECURITY_STANDARD_ENABLED: false\nSERVICE_DOMAIN: from-values\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SERVICE_DOMAIN", "from-env")
	t.Setenv("POD_SECURITY_STANDARD_ENABLED", "true")
	args2 := append(append([]string{}, args[:len(args)-2]...), "--values", values)
	out, errOut, code = runCapctl(t, args2...)
	if code != 0 || !strings.Contains(out, "serviceDomain: from-values") || !strings.Contains(out, "enabled: false") {
		t.Fatalf("values file: exit %d, %s\n%s", code, errOut, out)
	}
	out, _, _ = runCapctl(t, append(args2, "--set", "SERVICE_DOMAIN=from-set")...)
	if !strings.Contains(out, "serviceDomain: from-set") {
		t.Errorf("--set does not win over --values")
	}
	out, _, _ = runCapctl(t, args[:len(args)-2]...)
	if !strings.Contains(out, "serviceDomain: from-env") || !strings.Contains(out, "enabled: true") {
		t.Errorf("environment not used")
	}
	os.Unsetenv("SERVICE_DOMAIN")
	cfg2 := repoTestConfig(t, "SERVICE_DOMAIN: from-config\nKUBERNETES_VERSION: v1.33.0\n")
	noCluster(t)
	out, _, _ = runCapctl(t, "generate", "cluster", "c1", "--config", cfg2, "-i", "docker:v1.14.0", "--flavor", "development")
	if !strings.Contains(out, "serviceDomain: from-config") || !strings.Contains(out, "version: v1.33.0") {
		t.Errorf("config file variables not used:\n%s", out)
	}
}

func TestGenerateClusterListFlavors(t *testing.T) {
	cfg := repoTestConfig(t, "")
	noCluster(t)
	out, errOut, code := runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "-i", "docker:v1.13.5", "--list-flavors")
	if code != 0 || out != "development\ndevelopment-mp\nin-memory\n" {
		t.Fatalf("exit %d %s\n%q", code, errOut, out)
	}
	_, errOut, code = runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "-i", "docker:v1.13.5", "--list-flavors", "--from", "x.yaml")
	if code == 0 || !strings.Contains(errOut, "--list-flavors") {
		t.Errorf("combined with --from: %d %s", code, errOut)
	}
}

func TestGenerateClusterListVariables(t *testing.T) {
	cfg := repoTestConfig(t, "")
	noCluster(t)
	out, errOut, code := runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "-i", "docker:v1.14.0", "--flavor", "development", "--list-variables", "-n", "ns1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := `Required Variables:
  - KUBERNETES_VERSION

Optional Variables:
  - CLUSTER_NAME                   (defaults to c1)
  - CONTROL_PLANE_MACHINE_COUNT    (defaults to 1)
  - NAMESPACE                      (defaults to ns1)
  - POD_CIDR                       (defaults to "[\"192.168.0.0/16\"]")
  - POD_SECURITY_STANDARD_ENABLED  (defaults to "true")
  - SERVICE_CIDR                   (defaults to "[\"10.128.0.0/12\"]")
  - SERVICE_DOMAIN                 (defaults to "cluster.local")
  - WORKER_MACHINE_COUNT           (defaults to 0)

`
	if out != want {
		t.Errorf("--list-variables:\n%s\nwant:\n%s", out, want)
	}
}

func TestGenerateClusterBadInputs(t *testing.T) {
	cfg := repoTestConfig(t, "")
	noCluster(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/html":
			w.Write([]byte("<html><body>\n<h1>Hello</h1></body></html>\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	manyMissing := filepath.Join(t.TempDir(), "many.yaml")
	if err := os.WriteFile(manyMissing, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${C_VAR}\ndata:\n  a: ${A_VAR}\n  b: ${B_VAR:=}\n  c: ${C_VAR}\n  d: ${D_VAR:=ok}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"invalid cluster name before any fetch", []string{"generate", "cluster", "Bad_Name", "--from", srv.URL + "/t.yaml"},
			[]string{`invalid cluster name "Bad_Name"`}},
		{"missing variables all at once", []string{"generate", "cluster", "c1", "-i", "docker:v1.14.0", "--flavor", "development", "--set", "X=1"},
			[]string{"value for variables [KUBERNETES_VERSION] is not set"}},
		{"several missing variables at once", []string{"generate", "cluster", "c1", "--from", manyMissing},
			[]string{"value for variables [A_VAR, B_VAR, C_VAR] is not set"}},
		{"flavor not found lists flavors", []string{"generate", "cluster", "c1", "-i", "docker:v1.14.0", "--flavor", "nope"},
			[]string{`docker v1.14.0 has no flavor "nope"`, "available flavors: development, development-mp, in-memory"}},
		{"no default template", []string{"generate", "cluster", "c1", "-i", "docker:v1.14.0"},
			[]string{"has no default template", "cluster-template.yaml", "available flavors: development"}},
		{"url 404", []string{"generate", "cluster", "c1", "--from", srv.URL + "/missing.yaml"},
			[]string{"fetching " + srv.URL + "/missing.yaml", "404"}},
		{"url not yaml", []string{"generate", "cluster", "c1", "--from", srv.URL + "/html"},
			[]string{srv.URL + "/html: document 1 (line 1)"}},
		{"two sources", []string{"generate", "cluster", "c1", "--from", "a.yaml", "--from-config-map", "cm"},
			[]string{"only one of --from and --from-config-map"}},
		{"bad kubernetes version", []string{"generate", "cluster", "c1", "--from", "a.yaml", "--kubernetes-version", "latest"},
			[]string{"invalid --kubernetes-version"}},
		{"bad count", []string{"generate", "cluster", "c1", "--from", "a.yaml", "--control-plane-machine-count", "0"},
			[]string{"invalid --control-plane-machine-count 0"}},
		{"bad --set", []string{"generate", "cluster", "c1", "--from", "a.yaml", "--set", "NOEQUALS"},
			[]string{`invalid --set "NOEQUALS"`}},
		{"--set of a built-in", []string{"generate", "cluster", "c1", "--from", "a.yaml", "--set", "NAMESPACE=x"},
			[]string{"NAMESPACE is set by --target-namespace"}},
		{"bad output", []string{"generate", "cluster", "c1", "--from", "a.yaml", "-o", "xml"},
			[]string{`invalid output format "xml"`}},
		{"no infrastructure and no cluster", []string{"generate", "cluster", "c1"},
			[]string{"pass --infrastructure"}},
		{"unknown provider", []string{"generate", "cluster", "c1", "-i", "dockr"},
			[]string{"docker"}},
		{"missing file", []string{"generate", "cluster", "c1", "--from", filepath.Join(t.TempDir(), "nope.yaml")},
			[]string{"nope.yaml", "no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := hits.Load()
			out, errOut, code := runCapctl(t, append(c.args, "--config", cfg)...)
			if code == 0 {
				t.Fatalf("exit 0, stdout %q", out)
			}
			if out != "" {
				t.Errorf("stdout not empty on error: %q", out)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if c.name == "invalid cluster name before any fetch" && hits.Load() != before {
				t.Errorf("the template was fetched before the name was checked")
			}
		})
	}
}

func TestGenerateClusterFromSources(t *testing.T) {
	noCluster(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	tmpl := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}-cm\ndata:\n  workers: \"${WORKER_MACHINE_COUNT}\"\n  extra: ${EXTRA:=none}\n"
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Write([]byte(tmpl))
	}))
	defer srv.Close()
	t.Setenv(config.GitHubRawURLKey, srv.URL)

	want := "apiVersion: v1\ndata:\n  extra: none\n  workers: \"0\"\nkind: ConfigMap\nmetadata:\n  name: c1-cm\n  namespace: default\n"
	// stdin
	out, errOut, code := runCapctlWithInput(t, tmpl, "generate", "cluster", "c1", "--from", "-")
	if code != 0 || out != want {
		t.Fatalf("stdin: exit %d, %s\n%q", code, errOut, out)
	}
	// file, with a namespace flag
	f := filepath.Join(t.TempDir(), "t.yaml")
	os.WriteFile(f, []byte(tmpl), 0o600)
	out, _, code = runCapctl(t, "generate", "cluster", "c1", "--from", f, "-n", "ns2")
	if code != 0 || !strings.Contains(out, "namespace: ns2") {
		t.Fatalf("file: %d %q", code, out)
	}
	// file:// URL; the namespace defaults to the kubeconfig context's (no connection is made).
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters:
- name: x
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: x
  context: {cluster: x, user: x, namespace: from-context}
current-context: x
users:
- name: x
  user: {token: t}
`), 0o600)
	out, errOut, code = runCapctl(t, "generate", "cluster", "c1", "--from", "file://"+f, "--kubeconfig", kc)
	if code != 0 || !strings.Contains(out, "namespace: from-context") {
		t.Fatalf("kubeconfig namespace: %d %s %q", code, errOut, out)
	}
	// plain URL and a GitHub blob URL (read from its raw form)
	out, _, code = runCapctl(t, "generate", "cluster", "c1", "--from", srv.URL+"/t.yaml")
	if code != 0 || out != want {
		t.Fatalf("url: %d %q", code, out)
	}
	out, errOut, code = runCapctl(t, "generate", "cluster", "c1", "--from", "https://github.com/acme/templates/blob/main/capd/t.yaml")
	if code != 0 || out != want {
		t.Fatalf("github blob: %d %s %q", code, errOut, out)
	}
	if got := paths[len(paths)-1]; got != "/acme/templates/main/capd/t.yaml" {
		t.Errorf("raw path %q", got)
	}
	// -o json and --write-to (0600)
	dst := filepath.Join(t.TempDir(), "out.json")
	out, errOut, code = runCapctlWithInput(t, tmpl, "generate", "cluster", "c1", "--from", "-", "-o", "json", "--write-to", dst)
	if code != 0 || out != "" {
		t.Fatalf("write-to: %d %s %q", code, errOut, out)
	}
	st, err := os.Stat(dst)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v %v", st, err)
	}
	var list struct {
		Kind  string
		Items []map[string]any
	}
	b, _ := os.ReadFile(dst)
	if err := json.Unmarshal(b, &list); err != nil || list.Kind != "List" || len(list.Items) != 1 {
		t.Fatalf("json: %v %s", err, b)
	}
}

func TestGenerateYAML(t *testing.T) {
	noCluster(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	in := "# a comment with ${FROM_COMMENT:=c}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${NAME}\n  namespace: keep\ndata:\n  cmd: echo $HOME $$ESCAPED $${LITERAL}\n"
	out, errOut, code := runCapctlWithInput(t, in, "generate", "yaml", "--set", "NAME=x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := "apiVersion: v1\ndata:\n  cmd: echo $HOME $ESCAPED ${LITERAL}\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: keep\n"
	if out != want {
		t.Errorf("got\n%q\nwant\n%q", out, want)
	}
	out, _, code = runCapctlWithInput(t, in, "generate", "yaml", "--list-variables")
	if code != 0 || out != "Variables:\n  - FROM_COMMENT\n  - NAME\n" {
		t.Errorf("--list-variables: %d %q", code, out)
	}
	out, _, _ = runCapctlWithInput(t, "kind: A\napiVersion: v1\n", "generate", "yaml", "--list-variables")
	if out != "\n" {
		t.Errorf("--list-variables without variables: %q", out)
	}
	out, errOut, code = runCapctlWithInput(t, in+"x: ${MISSING_TOO}\n", "generate", "yaml")
	if code == 0 || out != "" || !strings.Contains(errOut, "[MISSING_TOO, NAME]") {
		t.Errorf("missing: %d %q %s", code, out, errOut)
	}
}

// TestGenerateClusterAgainstManagementCluster runs generate cluster against a real API server:
// the default infrastructure provider and version come from the inventory, a ClusterClass that
// exists in the target namespace is not emitted, and --from-config-map reads a ConfigMap.
func TestGenerateClusterAgainstManagementCluster(t *testing.T) {
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{filepath.Join(testenv.FixturesDir(t), "crds", "cluster.x-k8s.io.yaml")}})
	ctx := testenv.Context(t)
	cfg := repoTestConfig(t, "") // after Start: it moves XDG_CACHE_HOME
	env.CreateNamespaces(t, "capd-system", "capa-system", "team-a", "team-b")
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		t.Fatal(err)
	}
	if err := inventory.Write(ctx, env.Client, inventory.New("docker", provider.InfrastructureProviderType, "v1.13.5", "capd-system")); err != nil {
		t.Fatal(err)
	}
	// The ClusterClass of the development flavor, as the template renders it, created in team-a.
	class := goldenClusterClass(t, "v1.13.5")
	class.SetNamespace("team-a")
	if err := env.Client.Create(ctx, class); err != nil {
		t.Fatalf("creating the ClusterClass: %v", err)
	}

	base := []string{"generate", "cluster", "c1", "--config", cfg, "--kubeconfig", env.Kubeconfig, "--flavor", "development", "--kubernetes-version", "v1.34.1"}
	out, errOut, code := runCapctl(t, append(base, "-n", "team-a", "-v", "1")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	kinds := kindsOf(t, out)
	if strings.Contains(kinds, "ClusterClass") || !strings.Contains(kinds, "Cluster") {
		t.Errorf("team-a has the class: want no ClusterClass, got %s", kinds)
	}
	if !strings.Contains(errOut, "v1.13.5") || !strings.Contains(errOut, "team-a/quick-start") {
		t.Errorf("stderr does not say which version and class were used:\n%s", errOut)
	}
	out, errOut, code = runCapctl(t, append(base, "-n", "team-b")...)
	if code != 0 || !strings.Contains(kindsOf(t, out), "ClusterClass") {
		t.Fatalf("team-b lacks the class: exit %d, kinds %s, %s", code, kindsOf(t, out), errOut)
	}

	// --from-config-map, namespace from the kubeconfig context (default).
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "tmpl", Namespace: "default"},
		Data: map[string]string{"template": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: ${CLUSTER_NAME}-s\nstringData:\n  k: ${VALUE}\n"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "--kubeconfig", env.Kubeconfig, "--from-config-map", "tmpl", "--set", "VALUE=v")
	if code != 0 || !strings.Contains(out, "name: c1-s") || !strings.Contains(out, "namespace: default") {
		t.Fatalf("config map: exit %d %s\n%s", code, errOut, out)
	}
	_, errOut, code = runCapctl(t, "generate", "cluster", "c1", "--config", cfg, "--kubeconfig", env.Kubeconfig, "--from-config-map", "tmpl", "--from-config-map-key", "nope")
	if code == 0 || !strings.Contains(errOut, `does not have the "nope" data key`) {
		t.Errorf("bad key: %d %s", code, errOut)
	}

	// A ClusterClass file some of whose objects exist while the class does not: refused, naming
	// the object (clusterctl's rule: never emit a partial class).
	tmpl := []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  topology:\n    classRef:\n      name: partial\n")
	classFile := []byte("apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata:\n  name: partial\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tmpl\n")
	_, err := templates.Render(ctx, templates.Input{Name: "t.yaml", Template: tmpl, TargetNamespace: "default", Cluster: env.Client,
		ClusterClass: func(context.Context, string) ([]byte, string, error) {
			return classFile, "clusterclass-partial.yaml", nil
		}})
	if err == nil || !strings.Contains(err.Error(), "default/tmpl") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("partial class: %v", err)
	}

	// Two infrastructure providers: no default.
	if err := inventory.Write(ctx, env.Client, inventory.New("aws", provider.InfrastructureProviderType, "v2.8.0", "capa-system")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCapctl(t, base...)
	if code == 0 || !strings.Contains(errOut, "several infrastructure providers (aws, docker)") {
		t.Errorf("two providers: %d %s", code, errOut)
	}
}

func goldenClusterClass(t *testing.T, version string) *unstructured.Unstructured {
	t.Helper()
	for _, doc := range strings.Split(goldenFile(t, version, "cluster-template-development.yaml"), "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetKind() == "ClusterClass" {
			return u
		}
	}
	t.Fatal("no ClusterClass in the golden file")
	return nil
}

func kindsOf(t *testing.T, out string) string {
	t.Helper()
	var kinds []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var m struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.Kind)
	}
	return strings.Join(kinds, ",")
}
