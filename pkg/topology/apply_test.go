package topology

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/topologyengine"
)

func obj(apiVersion, kind, ns, name string, spec map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "spec": spec}}
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// testPlanFile is a plan of a class change (its worker template changed) over two clusters.
func testPlanFile() *PlanFile {
	ref := func(kind, name string) map[string]any {
		return map[string]any{"templateRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": kind, "name": name}}
	}
	class := obj("cluster.x-k8s.io/v1beta2", "ClusterClass", "prod", "qs", map[string]any{
		"infrastructure": ref("DockerClusterTemplate", "qs-cluster"),
		"workers":        map[string]any{"machineDeployments": []any{map[string]any{"class": "md", "infrastructure": ref("DockerMachineTemplate", "qs-md")}}},
	})
	class.SetResourceVersion("42")
	class.SetAnnotations(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}", "team": "platform"})
	md := obj("infrastructure.cluster.x-k8s.io/v1beta2", "DockerMachineTemplate", "prod", "qs-md", map[string]any{"template": map[string]any{"spec": map[string]any{"extraMounts": []any{}}}})
	rolls := topologyengine.Outcome{MachineDeployments: []topologyengine.Rollout{{Name: "md-0", RollsOut: true}}, Changes: []topologyengine.Change{{Kind: "MachineDeployment", Name: "a-md-0", Action: topologyengine.Update}}}
	return &PlanFile{APIVersion: PlanFileAPIVersion, Kind: PlanFileKind, Digest: "sha256:abc",
		Inputs:   []Input{{Kind: "ClusterClass", Namespace: "prod", Name: "qs", Digest: "sha256:1"}, {Kind: "DockerMachineTemplate", Namespace: "prod", Name: "qs-md", Digest: "sha256:2"}},
		Clusters: []ClusterPlan{{Namespace: "prod", Name: "a", Class: "qs", Outcome: rolls}, {Namespace: "prod", Name: "b", Class: "qs", Outcome: rolls}},
		Objects:  []unstructured.Unstructured{class, md},
		Live: []LiveObject{{Kind: "Cluster", Namespace: "prod", Name: "a", UID: "u-a", Generation: 3}, {Kind: "Cluster", Namespace: "prod", Name: "b", UID: "u-b", Generation: 5},
			{Kind: "ClusterClass", Namespace: "prod", Name: "qs", UID: "u-qs", Generation: 7}},
	}
}

// TestResolveRebase: the plan becomes a rebase of its clusters onto the class under a new name,
// the changed template renamed and referenced, only what a user sets kept.
func TestResolveRebase(t *testing.T) {
	rp, err := resolveRebase(testPlanFile(), "")
	if err != nil {
		t.Fatal(err)
	}
	short := inputsDigest(testPlanFile().Inputs)
	if rp.from != "qs" || rp.to != "qs-"+short || rp.namespace != "prod" || len(short) != 8 {
		t.Errorf("rebase %s/%s -> %s", rp.namespace, rp.from, rp.to)
	}
	if len(rp.rebase.Clusters) != 2 || rp.rebase.Clusters[1].Generation != 5 || rp.rebase.Clusters[0].UID != "u-a" || strings.Join(rp.rebase.Clusters[0].RollsOut, ",") != "MachineDeployment md-0" {
		t.Errorf("clusters %+v", rp.rebase.Clusters)
	}
	objs := rp.objects[""]
	if len(objs) != 2 || objs[0].GetName() != "qs-md-"+short || objs[1].GetName() != rp.to {
		t.Fatalf("objects %v", objs)
	}
	class := objs[1].DeepCopy()
	renameRefs(class.Object["spec"], rp.renamed)
	name, _, _ := unstructured.NestedString(class.Object["spec"].(map[string]any)["workers"].(map[string]any)["machineDeployments"].([]any)[0].(map[string]any), "infrastructure", "templateRef", "name")
	infra, _, _ := unstructured.NestedString(class.Object, "spec", "infrastructure", "templateRef", "name")
	if name != "qs-md-"+short || infra != "qs-cluster" {
		t.Errorf("the class references %s and %s", name, infra)
	}
	a := class.GetAnnotations()
	if class.GetResourceVersion() != "" || a["kubectl.kubernetes.io/last-applied-configuration"] != "" || a["team"] != "platform" || a[PlanAnnotation] != "sha256:abc" || a[RebasedFromAnnotation] != "qs" {
		t.Errorf("class metadata %v", class.Object["metadata"])
	}
	if rp, err := resolveRebase(testPlanFile(), "qs-v2"); err != nil || rp.to != "qs-v2" {
		t.Errorf("--class-name: %v", err)
	}
}

// TestResolveRebaseRefuses: every reason a plan is not rolled out is listed.
func TestResolveRebaseRefuses(t *testing.T) {
	pf := testPlanFile()
	pf.Clusters[0].Refused = "spec.workers: forbidden"
	pf.Clusters[1].Partial = "not computed: external patches"
	pf.Objects = append(pf.Objects, obj("cluster.x-k8s.io/v1beta2", "Cluster", "prod", "c", map[string]any{}))
	pf.Live = append(pf.Live, LiveObject{Kind: "ClusterClass", Namespace: "prod", Name: "other"})
	_, err := resolveRebase(pf, "")
	for _, want := range []string{"prod/a: the plan says upstream admission refuses it: spec.workers: forbidden", "prod/b: the plan is partial", "changes Cluster c", "one class at a time"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v lacks %q", err, want)
		}
	}
	pf = testPlanFile()
	for i := range pf.Clusters {
		pf.Clusters[i].Changes = nil
	}
	if _, err := resolveRebase(pf, ""); err == nil || !strings.Contains(err.Error(), "changes no cluster") {
		t.Errorf("a plan without changes: %v", err)
	}
	if _, err := resolveRebase(testPlanFile(), "qs"); err == nil {
		t.Error("--class-name of the old class accepted")
	}
	if err := (ApplyRequest{Plan: "p", ClassName: "Bad_Name"}).Validate(); err == nil || !strings.Contains(err.Error(), "--class-name") {
		t.Errorf("bad --class-name: %v", err)
	}
}

// TestLoadPlanRefusesAnEditedFile: a plan edited after it was saved is refused, naming both
// digests; the saved one loads.
func TestLoadPlanRefusesAnEditedFile(t *testing.T) {
	pf := testPlanFile()
	pf.Digest = ""
	data, _ := json.Marshal(pf)
	sum := sha256.Sum256(data)
	pf.Digest = "sha256:" + hex.EncodeToString(sum[:])
	data, _ = json.MarshalIndent(pf, "", "  ")
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadPlan(context.Background(), path); err != nil || got.Digest != pf.Digest || len(got.Objects) != 2 {
		t.Fatalf("load: %v", err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"generation": 5`, `"generation": 6`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPlan(context.Background(), path); err == nil || !strings.Contains(err.Error(), "was edited after it was saved") {
		t.Errorf("edited plan: %v", err)
	}
}
