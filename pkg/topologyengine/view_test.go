package topologyengine

import (
	"context"
	"errors"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func cluster(ns, name, class string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"env": "prod"}},
		Spec:       clusterv1.ClusterSpec{Topology: clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: class}, Version: "v1.34.2"}},
	}
}

func toUnstructured(t *testing.T, c *clusterv1.Cluster) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := Scheme().Convert(c, u, nil); err != nil {
		t.Fatal(err)
	}
	u.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
	return u
}

// The view serves planned objects over live ones: by Get, typed or not, and in lists (replacing
// the live object of the same name, adding new ones where namespace and labels match), and it
// evaluates the ClusterClass index upstream's webhook lists Clusters with.
func TestViewOverlaysPlannedObjects(t *testing.T) {
	live := fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(cluster("a", "c1", "old"), cluster("a", "c2", "old"), cluster("b", "c3", "old")).Build()
	changed := cluster("a", "c1", "new")
	added := cluster("a", "c4", "new")
	v := newView(live, Scheme(), []*unstructured.Unstructured{toUnstructured(t, changed), toUnstructured(t, added)})
	ctx := context.Background()

	got := &clusterv1.Cluster{}
	if err := v.Get(ctx, client.ObjectKey{Namespace: "a", Name: "c1"}, got); err != nil || got.Spec.Topology.ClassRef.Name != "new" {
		t.Fatalf("typed Get of a planned Cluster: %v %+v", err, got.Spec.Topology.ClassRef)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
	if err := v.Get(ctx, client.ObjectKey{Namespace: "a", Name: "c2"}, u); err != nil || u.GetName() != "c2" {
		t.Fatalf("unstructured Get of a live Cluster: %v", err)
	}

	list := &clusterv1.ClusterList{}
	if err := v.List(ctx, list, client.InNamespace("a")); err != nil {
		t.Fatal(err)
	}
	classes := map[string]string{}
	for _, c := range list.Items {
		classes[c.Name] = c.Spec.Topology.ClassRef.Name
	}
	if want := map[string]string{"c1": "new", "c2": "old", "c4": "new"}; !reflect.DeepEqual(classes, want) {
		t.Errorf("list of namespace a: %v, want %v", classes, want)
	}

	byClass := &clusterv1.ClusterList{}
	if err := v.List(ctx, byClass, client.MatchingFields{index.ClusterClassRefPath: "a/new"}); err != nil {
		t.Fatal(err)
	}
	if len(byClass.Items) != 2 {
		t.Errorf("Clusters of class a/new: %d, want 2 (c1 as planned, c4)", len(byClass.Items))
	}
	if err := v.List(ctx, &clusterv1.ClusterList{}, client.MatchingFields{"spec.other": "x"}); err == nil {
		t.Error("an unknown field selector was accepted")
	}
}

// The clients handed to upstream code write nothing: every write but a server-side-apply dry
// run is refused with ErrWrite.
func TestReadOnlyRefusesWrites(t *testing.T) {
	live := fake.NewClientBuilder().WithScheme(Scheme()).Build()
	ro := &readOnly{Client: live, view: newView(live, Scheme(), nil)}
	ctx := context.Background()
	c := cluster("a", "c1", "x")
	for name, err := range map[string]error{
		"create":      ro.Create(ctx, c),
		"update":      ro.Update(ctx, c),
		"patch":       ro.Patch(ctx, c, client.MergeFrom(c)),
		"delete":      ro.Delete(ctx, c),
		"deleteall":   ro.DeleteAllOf(ctx, c),
		"status":      ro.Status().Update(ctx, c),
		"apply":       ro.Apply(ctx, client.ApplyConfigurationFromUnstructured(toUnstructured(t, c))),
		"subresource": ro.SubResource("scale").Patch(ctx, c, client.MergeFrom(c)),
	} {
		if !errors.Is(err, ErrWrite) {
			t.Errorf("%s: %v, want ErrWrite", name, err)
		}
	}
}

func TestFieldPaths(t *testing.T) {
	got := fieldPaths(`{"metadata":{"labels":{"team":"blue"}},"spec":{"template":{"spec":{"version":"v1.35.0","x":null}}}}`)
	want := []string{"metadata.labels.team", "spec.template.spec.version", "spec.template.spec.x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("fieldPaths = %v, want %v", got, want)
	}
	if fieldPaths("") != nil {
		t.Error("an empty patch has fields")
	}
}

// A planned class is seen reconciled, with its inline variables in its status, sorted.
func TestReconciledClass(t *testing.T) {
	class := &clusterv1.ClusterClass{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 3}, Spec: clusterv1.ClusterClassSpec{Variables: []clusterv1.ClusterClassVariable{{Name: "z"}, {Name: "a"}}}}
	obj, err := Scheme().ConvertToVersion(class, clusterv1.GroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := Scheme().Convert(obj, u, nil); err != nil {
		t.Fatal(err)
	}
	r, err := reconciledClass(u)
	if err != nil {
		t.Fatal(err)
	}
	got := &clusterv1.ClusterClass{}
	if err := Scheme().Convert(r, got, nil); err != nil {
		t.Fatal(err)
	}
	if got.Status.ObservedGeneration != 3 || len(got.Status.Variables) != 2 || got.Status.Variables[0].Name != "a" || got.Status.Variables[0].Definitions[0].From != clusterv1.VariableDefinitionFromInline {
		t.Errorf("status %+v", got.Status)
	}
}
