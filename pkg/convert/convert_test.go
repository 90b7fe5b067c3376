package convert

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/v1beta1set"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/repository"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestConvertClassicSet converts a typical v1beta1 set (references, strategies, timeouts, an MHC,
// a ClusterResourceSet, the Docker provider's kinds and a ConfigMap) and compares with the golden
// file.
func TestConvertClassicSet(t *testing.T) {
	in := readTestdata(t, "classic-v1beta1.yaml")
	fr := ConvertText("classic-v1beta1.yaml", in)

	golden := filepath.Join("testdata", "classic-v1beta2.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, fr.Output, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fr.Output, want) {
		t.Errorf("output differs from %s (go test ./pkg/convert -update to accept):\n%s", golden, fr.Output)
	}

	// Document order and actions.
	var got []string
	for _, o := range fr.Objects {
		if o.Error != "" {
			t.Errorf("%s: %s", o.Object(), o.Error)
		}
		got = append(got, o.Kind+" "+o.From+"->"+o.To+" "+o.Action)
	}
	wantObjs := []string{
		"ConfigMap v1->v1 not Cluster API",
		"Cluster v1beta1->v1beta2 converted",
		"DockerCluster v1beta1->v1beta2 converted",
		"KubeadmControlPlane v1beta1->v1beta2 converted",
		"DockerMachineTemplate v1beta1->v1beta2 converted",
		"DockerMachineTemplate v1beta1->v1beta2 converted",
		"KubeadmConfigTemplate v1beta1->v1beta2 converted",
		"MachineDeployment v1beta1->v1beta2 converted",
		"MachineHealthCheck v1beta1->v1beta2 converted",
		"ClusterResourceSet v1beta1->v1beta2 converted",
	}
	if !reflect.DeepEqual(got, wantObjs) {
		t.Errorf("objects:\n got %q\nwant %q", got, wantObjs)
	}

	docs := repository.SplitDocuments(fr.Output)
	objs := map[string]map[string]any{}
	for _, d := range docs {
		raw, err := sigsyaml.YAMLToJSON(d.Text)
		if err != nil {
			t.Fatal(err)
		}
		m, err := decodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		objs[gvkOf(m).Kind] = m
	}

	// References: the v1beta2 apiGroup/kind/name form, none dropped.
	refs := []struct {
		kind, path, group, refKind, name string
	}{
		{"Cluster", "spec.controlPlaneRef", "controlplane.cluster.x-k8s.io", "KubeadmControlPlane", "prod-1-control-plane"},
		{"Cluster", "spec.infrastructureRef", "infrastructure.cluster.x-k8s.io", "DockerCluster", "prod-1"},
		{"KubeadmControlPlane", "spec.machineTemplate.spec.infrastructureRef", "infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", "prod-1-control-plane"},
		{"MachineDeployment", "spec.template.spec.bootstrap.configRef", "bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate", "prod-1-md-0"},
		{"MachineDeployment", "spec.template.spec.infrastructureRef", "infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", "prod-1-md-0"},
	}
	for _, r := range refs {
		ref, ok := nestedMap(objs[r.kind], path(r.path))
		want := map[string]any{"apiGroup": r.group, "kind": r.refKind, "name": r.name}
		if !ok || !reflect.DeepEqual(ref, want) {
			t.Errorf("%s %s = %v, want %v", r.kind, r.path, ref, want)
		}
	}

	// Fields without a v1beta2 home are reported by object and path.
	warnings := map[string][]string{}
	for _, o := range fr.Objects {
		if o.Action == conversion.Converted && len(o.Warnings) > 0 {
			warnings[o.Object()] = o.Warnings
		}
	}
	wantWarnings := map[string][]string{
		"MachineDeployment team-a/prod-1-md-0": {
			`spec.progressDeadlineSeconds: 600 has no place in v1beta2 and is dropped`,
			`spec.template.spec.infrastructureRef.uid: "3f1c2d3e-0000-4000-8000-000000000001" has no place in v1beta2 and is dropped`,
		},
	}
	if !reflect.DeepEqual(warnings, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", warnings, wantWarnings)
	}

	// The ConfigMap is byte for byte the input's.
	inDocs := repository.SplitDocuments(in)
	for _, i := range []int{0} {
		if !bytes.Equal(inDocs[i].Text, docs[i].Text) {
			t.Errorf("document %d changed:\n%s\nwant\n%s", i, docs[i].Text, inDocs[i].Text)
		}
	}
	// Comments of converted objects are kept where the field kept its path.
	for _, c := range []string{"# the CRS below selects on this", "# scaled down for the weekend: 0, not the default 1"} {
		if !bytes.Contains(fr.Output, []byte(c)) {
			t.Errorf("comment %q lost", c)
		}
	}
	// Explicit zeros that mean something survive: replicas 0 and maxSurge 0.
	if v, _ := nested(objs["MachineDeployment"], path("spec.replicas")); v == nil || v.(interface{ String() string }).String() != "0" {
		t.Errorf("MachineDeployment replicas = %v, want 0", v)
	}
	if v, ok := nested(objs["KubeadmControlPlane"], path("spec.rollout.strategy.rollingUpdate.maxSurge")); !ok || v.(interface{ String() string }).String() != "0" {
		t.Errorf("KubeadmControlPlane maxSurge = %v, want 0", v)
	}
}

// TestNoZeroValueNoise: the converter's zero values (paused: false, exclusiveMaximum: false,
// creationTimestamp: null, status: {}) do not reach the output; every object of the fixtures'
// templates converts without a warning.
func TestNoZeroValueNoise(t *testing.T) {
	for _, name := range v1beta1set.Templates {
		fr := ConvertText(name, v1beta1set.Render(t, name))
		for _, noise := range []string{"exclusiveMaximum", "exclusiveMinimum", "uniqueItems", "x-kubernetes-preserve-unknown-fields: false", "paused: false", "creationTimestamp", "\nstatus:", ": null"} {
			if bytes.Contains(fr.Output, []byte(noise)) {
				t.Errorf("%s: output has %q:\n%s", name, noise, fr.Output)
			}
		}
		for _, o := range fr.Objects {
			if o.Error != "" || len(o.Warnings) > 0 || o.Action != conversion.Converted {
				t.Errorf("%s %s: %s %s %q", name, o.Object(), o.Action, o.Error, o.Warnings)
			}
		}
	}
}

// TestNonCAPIFileIsByteIdentical: a file without Cluster API objects comes out unchanged,
// separators with comments and odd spacing included.
func TestNonCAPIFileIsByteIdentical(t *testing.T) {
	in := []byte("# leading comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n--- # first\n\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: b}\n...\n")
	fr := ConvertText("x.yaml", in)
	if fr.Changed || !bytes.Equal(fr.Output, in) {
		t.Errorf("changed:\n%s", fr.Output)
	}
	// A converted object between them leaves them as they were.
	mixed := append(append([]byte{}, in...), []byte("---\napiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineHealthCheck\nmetadata:\n  name: m\nspec:\n  clusterName: c\n  selector: {}\n")...)
	fr = ConvertText("x.yaml", mixed)
	if !fr.Changed || !bytes.HasPrefix(fr.Output, in) || !bytes.Contains(fr.Output, []byte("cluster.x-k8s.io/v1beta2")) {
		t.Errorf("mixed:\n%s", fr.Output)
	}
}

// TestUnrenderedTemplateIsAnError: a raw template with ${VAR} placeholders cannot be decoded; the
// error names the object and suggests rendering it.
func TestUnrenderedTemplateIsAnError(t *testing.T) {
	in := []byte("apiVersion: cluster.x-k8s.io/v1beta1\nkind: MachineDeployment\nmetadata:\n  name: md\nspec:\n  clusterName: c\n  replicas: ${WORKER_MACHINE_COUNT}\n  selector: {}\n  template:\n    spec:\n      clusterName: c\n")
	fr := ConvertText("t.yaml", in)
	if len(fr.Objects) != 1 || !strings.Contains(fr.Objects[0].Error, "render it first") || fr.Changed {
		t.Fatalf("got %+v", fr.Objects)
	}
}

// TestOtherKinds: the hub's status moves (Machine, KubeadmConfig), the IPAM and runtime groups'
// older versions, the conversion-data annotation warning, and a kind of another group.
func TestOtherKinds(t *testing.T) {
	in := readTestdata(t, "other-kinds.yaml")
	fr := ConvertText("other-kinds.yaml", in)
	var got []string
	for _, o := range fr.Objects {
		if o.Error != "" {
			t.Errorf("%s: %s", o.Object(), o.Error)
		}
		got = append(got, o.Kind+" "+o.From+"->"+o.To+" "+o.Action)
	}
	want := []string{
		"Machine v1beta1->v1beta2 converted",
		"KubeadmConfig v1beta1->v1beta2 converted",
		"IPAddressClaim v1alpha1->v1beta2 converted",
		"IPAddress v1beta1->v1beta2 converted",
		"ExtensionConfig v1alpha1->v1beta2 converted",
		"Widget v1beta1->v1beta1 not Cluster API",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("objects:\n got %q\nwant %q", got, want)
	}
	if w := fr.Objects[0].Warnings; len(w) != 1 || !strings.Contains(w[0], "cluster.x-k8s.io/conversion-data") {
		t.Errorf("Machine warnings %q", w)
	}
	objs := map[string]map[string]any{}
	for _, d := range repository.SplitDocuments(fr.Output) {
		raw, _ := sigsyaml.YAMLToJSON(d.Text)
		m, err := decodeJSON(raw)
		if err != nil {
			t.Fatal(err)
		}
		objs[gvkOf(m).Kind] = m
	}
	for _, c := range []struct{ kind, path string }{
		{"Machine", "status.initialization.bootstrapDataSecretCreated"},
		{"Machine", "status.initialization.infrastructureProvisioned"},
		{"KubeadmConfig", "status.initialization.dataSecretCreated"},
	} {
		if v, ok := nested(objs[c.kind], path(c.path)); !ok || v != true {
			t.Errorf("%s %s = %v", c.kind, c.path, v)
		}
	}
	if v, _ := nested(objs["Machine"], path("status.phase")); v != "Running" {
		t.Errorf("Machine status.phase = %v", v)
	}
}

// TestListDocument: kubectl get -o yaml writes one v1 List; its Cluster API items are converted
// and its other items kept.
func TestListDocument(t *testing.T) {
	in := []byte(`apiVersion: v1
kind: List
items:
- apiVersion: cluster.x-k8s.io/v1beta1
  kind: Cluster
  metadata:
    name: prod-1
    namespace: team-a
    resourceVersion: "4711"
  spec:
    infrastructureRef:
      apiVersion: infrastructure.cluster.x-k8s.io/v1beta1
      kind: DockerCluster
      name: prod-1
  status:
    phase: Provisioned
    infrastructureReady: true
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: notes
    namespace: team-a
metadata:
  resourceVersion: ""
`)
	fr := ConvertText("list.yaml", in)
	if len(fr.Objects) != 2 || fr.Objects[0].Action != conversion.Converted || fr.Objects[1].Action != conversion.NotCAPI || !fr.Changed {
		t.Fatalf("objects %+v", fr.Objects)
	}
	raw, err := sigsyaml.YAMLToJSON(fr.Output)
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	items := m["items"].([]any)
	cl := items[0].(map[string]any)
	if cl["apiVersion"] != "cluster.x-k8s.io/v1beta2" {
		t.Errorf("item 0: %v", cl["apiVersion"])
	}
	if ref, _ := nestedMap(cl, path("spec.infrastructureRef")); ref["apiGroup"] != "infrastructure.cluster.x-k8s.io" {
		t.Errorf("ref %v", ref)
	}
	if v, _ := nested(cl, path("status.initialization.infrastructureProvisioned")); v != true {
		t.Errorf("status %v", cl["status"])
	}
	if v, _ := nested(cl, path("metadata.resourceVersion")); v != "4711" {
		t.Errorf("resourceVersion %v", v)
	}
	if cm := items[1].(map[string]any); cm["kind"] != "ConfigMap" || cm["apiVersion"] != "v1" {
		t.Errorf("item 1: %v", cm)
	}
}
