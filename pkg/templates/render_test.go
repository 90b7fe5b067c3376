package templates

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/variables"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenVars are the values the golden files were rendered with. SERVICE_DOMAIN and the CIDRs are
// left unset so that the templates' defaults show; POD_SECURITY_STANDARD_ENABLED overrides one.
var goldenVars = map[string]string{
	"CLUSTER_NAME":                  "golden",
	"NAMESPACE":                     "team-a",
	"KUBERNETES_VERSION":            "v1.34.1",
	"CONTROL_PLANE_MACHINE_COUNT":   "3",
	"WORKER_MACHINE_COUNT":          "2",
	"POD_SECURITY_STANDARD_ENABLED": "false",
}

func fixtureVersions(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(testenv.FixturesDir(t), "repository", "infrastructure-docker", "v*"))
	if len(dirs) == 0 {
		t.Fatal("no infrastructure-docker versions in the fixture repository")
	}
	return dirs
}

func classFromDir(dir string) func(context.Context, string) ([]byte, string, error) {
	return func(_ context.Context, name string) ([]byte, string, error) {
		f := filepath.Join(dir, ClusterClassFile(name))
		b, err := os.ReadFile(f)
		return b, f, err
	}
}

// TestRenderFixtureTemplatesGolden renders every cluster template of every infrastructure-docker
// version in the fixture repository, with its ClusterClass, and compares with golden files
// (reviewed by hand; -update rewrites them).
func TestRenderFixtureTemplatesGolden(t *testing.T) {
	for _, dir := range fixtureVersions(t) {
		version := filepath.Base(dir)
		files, _ := filepath.Glob(filepath.Join(dir, "cluster-template*.yaml"))
		if len(files) != 3 {
			t.Fatalf("%s: want 3 cluster templates, found %v", version, files)
		}
		for _, f := range files {
			t.Run(version+"/"+filepath.Base(f), func(t *testing.T) {
				raw, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				res, err := Render(context.Background(), Input{
					Name: f, Template: raw, TargetNamespace: "team-a",
					Lookup: variables.FromMap(goldenVars), ClusterClass: classFromDir(dir),
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(res.IncludedClasses) != 1 {
					t.Fatalf("included classes = %v, want one", res.IncludedClasses)
				}
				out, err := output.ObjectsYAML(res.Objects)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", version, filepath.Base(f)), out)

				// Properties the golden files were reviewed for.
				s := string(out)
				if strings.Contains(s, "${") {
					t.Error("unsubstituted expression in the output")
				}
				for i, o := range res.Objects {
					if o.GetNamespace() != "team-a" {
						t.Errorf("object %d %s/%s in namespace %q, want team-a", i, o.GetKind(), o.GetName(), o.GetNamespace())
					}
				}
				classAt, clusterAt := -1, -1
				for i, o := range res.Objects {
					switch o.GetKind() {
					case "ClusterClass":
						classAt = i
					case "Cluster":
						clusterAt = i
					}
				}
				if classAt < 0 || clusterAt < classAt {
					t.Errorf("ClusterClass at %d, Cluster at %d: the class must come first", classAt, clusterAt)
				}
				last := res.Objects[len(res.Objects)-1]
				tmplObjs, _ := repository.ParseObjects(f, raw)
				if want := tmplObjs[len(tmplObjs)-1].GetKind(); last.GetKind() != want {
					t.Errorf("last object %s, want the template's last (%s): document order lost", last.GetKind(), want)
				}
				if !strings.Contains(s, "cluster.local") || !strings.Contains(s, "192.168.0.0/16") || !strings.Contains(s, "v1.34.1") {
					t.Error("a default or a value is missing from the output")
				}
			})
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file: %v (run with -update to create it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (run with -update and review the diff):\n%s", path, firstDiff(string(want), string(got)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + x + "\n  got: " + y
		}
	}
	return ""
}

func TestRenderMissingVariablesOfTemplateAndClassTogether(t *testing.T) {
	tmpl := []byte(`apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: ${CLUSTER_NAME}
spec:
  topology:
    classRef:
      name: my-class
    version: ${KUBERNETES_VERSION}
`)
	class := []byte(`apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata:
  name: my-class
spec:
  infrastructure:
    templateRef:
      name: ${CLASS_INFRA}-${ALSO_OPTIONAL:=x}
`)
	fetch := func(_ context.Context, name string) ([]byte, string, error) {
		if name != "my-class" {
			t.Errorf("fetched class %q", name)
		}
		return class, "clusterclass-my-class.yaml", nil
	}
	res, err := Render(context.Background(), Input{Name: "t.yaml", Template: tmpl, TargetNamespace: "ns", ClusterClass: fetch})
	var me *variables.MissingError
	if !errors.As(err, &me) {
		t.Fatalf("want MissingError, got %v", err)
	}
	if want := []string{"CLASS_INFRA", "CLUSTER_NAME", "KUBERNETES_VERSION"}; !reflect.DeepEqual(me.Names, want) {
		t.Errorf("missing %v, want %v", me.Names, want)
	}
	if res == nil || len(res.Objects) != 0 {
		t.Errorf("objects on error: %+v", res)
	}

	// List only: no error, variables of both documents, class first (clusterctl's merge order).
	res, err = Render(context.Background(), Input{Name: "t.yaml", Template: tmpl, TargetNamespace: "ns", ClusterClass: fetch, ListOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range res.Variables {
		names = append(names, v.Name)
	}
	if want := []string{"CLASS_INFRA", "ALSO_OPTIONAL", "CLUSTER_NAME", "KUBERNETES_VERSION"}; !reflect.DeepEqual(names, want) {
		t.Errorf("variables %v, want %v", names, want)
	}

	// All set: class objects first, in the class namespace (= the cluster's).
	res, err = Render(context.Background(), Input{Name: "t.yaml", Template: tmpl, TargetNamespace: "ns", ClusterClass: fetch,
		Lookup: variables.FromMap(map[string]string{"CLUSTER_NAME": "c", "KUBERNETES_VERSION": "v1.34.1", "CLASS_INFRA": "i"})})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 2 || res.Objects[0].GetKind() != "ClusterClass" || res.Objects[0].GetNamespace() != "ns" {
		t.Fatalf("objects: %+v", res.Objects)
	}
	if n, _, _ := unstructured.NestedString(res.Objects[0].Object, "spec", "infrastructure", "templateRef", "name"); n != "i-x" {
		t.Errorf("class templateRef name %q", n)
	}
}

func TestClassRefs(t *testing.T) {
	objs, err := repository.ParseObjects("t", []byte(`apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: a, namespace: n1}
spec: {topology: {class: old, classNamespace: shared}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: b}
spec: {topology: {classRef: {name: new}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c, namespace: n3}
spec: {topology: {classRef: {name: new, namespace: n4}}}
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: no-topology}
---
apiVersion: example.org/v1
kind: Cluster
metadata: {name: other-group}
spec: {topology: {classRef: {name: nope}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	got := ClassRefs(objs, "def")
	want := []ClassRef{{"old", "shared"}, {"new", "def"}, {"new", "n4"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ClassRefs = %v, want %v", got, want)
	}
}

func TestNotYAMLAfterSubstitutionNamesDocumentAndLine(t *testing.T) {
	tmpl := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# second\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${NAME}\n")
	_, err := Render(context.Background(), Input{Name: "t.yaml", Template: tmpl, Lookup: variables.FromMap(map[string]string{"NAME": "x: [unclosed"})})
	var de *repository.DocumentError
	if !errors.As(err, &de) {
		t.Fatalf("want DocumentError, got %v", err)
	}
	if de.Document != 2 || de.Line < 7 || de.Line > 11 {
		t.Errorf("document %d line %d, want document 2 around line 10: %v", de.Document, de.Line, err)
	}
	if !strings.Contains(err.Error(), "t.yaml: document 2 (line ") {
		t.Errorf("message %q", err)
	}
	// A document that is not an object, and one without kind.
	for in, want := range map[string]string{
		"apiVersion: v1\nkind: A\n---\n- a list\n": "document 2 (line 4): not a YAML object",
		"metadata: {name: x}\n":                    "document 1 (line 1): the object has no apiVersion or kind",
		"<html><body>Not found</body></html>\n":    "document 1 (line 1)",
	} {
		_, err := Render(context.Background(), Input{Name: "t.yaml", Template: []byte(in)})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", in, err, want)
		}
	}
}

func TestFixNamespace(t *testing.T) {
	objs, err := repository.ParseObjects("t", []byte(`apiVersion: v1
kind: Namespace
metadata: {name: old}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: old}
---
apiVersion: v1
kind: Secret
metadata: {name: b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
subjects:
- {kind: ServiceAccount, name: sa, namespace: old}
- {kind: User, name: u}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cr}
`))
	if err != nil {
		t.Fatal(err)
	}
	FixNamespace(objs, "new")
	got := []string{}
	for _, o := range objs {
		got = append(got, o.GetKind()+"="+o.GetName()+"@"+o.GetNamespace())
	}
	want := []string{"Namespace=new@", "ConfigMap=a@new", "Secret=b@new", "ClusterRoleBinding=crb@", "ClusterRole=cr@"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	subs, _, _ := unstructured.NestedSlice(objs[3].Object, "subjects")
	if ns := subs[0].(map[string]any)["namespace"]; ns != "new" {
		t.Errorf("subject namespace %v", ns)
	}
	if _, ok := subs[1].(map[string]any)["namespace"]; ok {
		t.Error("a subject without namespace got one")
	}
}

func TestYAMLAndJSONOutput(t *testing.T) {
	objs, _ := repository.ParseObjects("t", []byte("kind: A\napiVersion: v1\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n"))
	// The documents parsed here print through the one object printer of the commands.
	y, err := output.ObjectsYAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	if want := "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n"; string(y) != want {
		t.Errorf("YAML:\n%s\nwant:\n%s", y, want)
	}
	j, err := output.ObjectsJSON(objs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(j), "{\n  \"apiVersion\": \"v1\",\n  \"items\": [") || !strings.Contains(string(j), `"kind": "List"`) {
		t.Errorf("JSON: %s", j)
	}
}

func TestMergeVariables(t *testing.T) {
	a := []variables.Variable{{Name: "A", Required: true}, {Name: "B", Default: "b1", HasDefault: true}}
	b := []variables.Variable{{Name: "A", Default: "a2", HasDefault: true}, {Name: "B", Default: "b2", HasDefault: true}, {Name: "C", Required: true}}
	got := MergeVariables(a, b)
	want := []variables.Variable{{Name: "A", Default: "a2", HasDefault: true}, {Name: "B", Default: "b1", HasDefault: true}, {Name: "C", Required: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// BenchmarkRenderDevelopment renders the development flavor of infrastructure-docker v1.14.0 with
// its ClusterClass (substitution, parsing, namespace fix) and prints it as YAML.
func BenchmarkRenderDevelopment(b *testing.B) {
	dir := filepath.Join(testenv.FixturesDir(b), "repository", "infrastructure-docker", "v1.14.0")
	raw, err := os.ReadFile(filepath.Join(dir, "cluster-template-development.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Render(context.Background(), Input{Name: "t", Template: raw, TargetNamespace: "team-a",
			Lookup: variables.FromMap(goldenVars), ClusterClass: classFromDir(dir)})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := output.ObjectsYAML(res.Objects); err != nil {
			b.Fatal(err)
		}
	}
}
