package move

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

var unitTypes = []TypeInfo{
	{GVK: schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}, Namespaced: true, ForceMove: true, ForceMoveHierarchy: true},
	{GVK: schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Machine"}, Namespaced: true},
	{GVK: schema.GroupVersionKind{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfig"}, Namespaced: true},
	{GVK: schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DockerMachine"}, Namespaced: true},
	{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespaced: true},
	{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true},
}

func unitObj(gvk schema.GroupVersionKind, name string, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetUID(types.UID(gvk.Kind + "-" + name))
	var refs []metav1.OwnerReference
	for _, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID()})
	}
	u.SetOwnerReferences(refs)
	return u
}

func TestBuildGraphExclusionsAndOrder(t *testing.T) {
	c := unitObj(unitTypes[0].GVK, "c")
	m := unitObj(unitTypes[1].GVK, "m", c)
	ghost := unitObj(unitTypes[0].GVK, "ghost") // never listed: a dangling owner
	orphanCfg := unitObj(unitTypes[2].GVK, "orphan", ghost)
	underOrphan := unitObj(unitTypes[3].GVK, "under-orphan", orphanCfg)
	kc := unitObj(unitTypes[4].GVK, "c-kubeconfig")
	stray := unitObj(unitTypes[4].GVK, "x-ca")
	labelled := unitObj(unitTypes[5].GVK, "labelled")
	labelled.SetLabels(map[string]string{"cluster.x-k8s.io/cluster-name": "c"})
	// Two objects forced into the move that own each other.
	a := unitObj(unitTypes[5].GVK, "loop-a")
	b := unitObj(unitTypes[5].GVK, "loop-b", a)
	a.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "loop-b", UID: b.GetUID()}})
	a.SetLabels(map[string]string{MoveLabel: ""})
	b.SetLabels(map[string]string{MoveLabel: ""})

	var objs []unstructured.Unstructured
	for _, o := range []*unstructured.Unstructured{c, m, orphanCfg, underOrphan, kc, stray, labelled, a, b} {
		objs = append(objs, *o)
	}
	g, err := BuildGraph(objs, unitTypes, Scope{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var moved []string
	for _, n := range g.Moved() {
		moved = append(moved, fmt.Sprintf("%s@%d", n.Ref.Name, n.Level))
	}
	if got := strings.Join(moved, " "); got != "c@0 m@1 c-kubeconfig@1" {
		t.Errorf("moved: %s", got)
	}
	reasons := map[string]string{}
	for _, e := range g.Excluded {
		reasons[e.Object.Name] = e.Reason
	}
	for name, want := range map[string]string{
		"orphan":       "does not exist",
		"under-orphan": "KubeadmConfig/ns/orphan is not moved",
		"labelled":     MoveLabel,
		"loop-a":       "cycle",
		"loop-b":       "cycle",
	} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("%s: reason %q, want it to mention %q", name, reasons[name], want)
		}
	}
	if _, listed := reasons["x-ca"]; listed {
		t.Error("a Secret linked with nothing Cluster API-like is listed as excluded")
	}
	if len(g.Excluded) != 5 {
		t.Errorf("excluded: %+v", g.Excluded)
	}
}

// BenchmarkBuildGraph shows graph building stays linear in objects (compare ns/object at both sizes).
func BenchmarkBuildGraph(b *testing.B) {
	for _, clusters := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clusters=%d", clusters), func(b *testing.B) {
			var objs []unstructured.Unstructured
			for i := range clusters {
				c := unitObj(unitTypes[0].GVK, fmt.Sprintf("c%d", i))
				objs = append(objs, *c, *unitObj(unitTypes[4].GVK, c.GetName()+"-kubeconfig"))
				for j := range 6 {
					m := unitObj(unitTypes[1].GVK, fmt.Sprintf("%s-m%d", c.GetName(), j), c)
					objs = append(objs, *m, *unitObj(unitTypes[2].GVK, m.GetName(), m), *unitObj(unitTypes[3].GVK, m.GetName(), m))
				}
			}
			b.ResetTimer()
			for range b.N {
				g, err := BuildGraph(objs, unitTypes, Scope{Namespace: "ns"})
				if err != nil || g.Count() != len(objs) {
					b.Fatalf("%v %d", err, g.Count())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(objs)), "ns/object")
		})
	}
}

// TestDropUnrestoredFieldOwners: a move keeps an object's field owners only when a server-side
// applier is among them (they are restored in the target); the rest are dropped as listed.
func TestDropUnrestoredFieldOwners(t *testing.T) {
	obj := func(ops ...string) *unstructured.Unstructured {
		var mf []any
		for _, op := range ops {
			mf = append(mf, map[string]any{"manager": "m-" + op, "operation": op, "fieldsV1": map[string]any{"f:spec": map[string]any{}}})
		}
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x", "managedFields": mf}}}
	}
	for _, tc := range []struct {
		ops  []string
		keep bool
	}{{[]string{"Update"}, false}, {[]string{"Update", "Apply"}, true}, {[]string{"Apply"}, true}, {nil, false}} {
		o := obj(tc.ops...)
		dropUnrestoredFieldOwners(o)
		_, kept := o.Object["metadata"].(map[string]any)["managedFields"]
		if kept != tc.keep || o.GetName() != "x" {
			t.Errorf("managers %v: managedFields kept %v, want %v (name %q)", tc.ops, kept, tc.keep, o.GetName())
		}
	}
}
