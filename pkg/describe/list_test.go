package describe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/pkg/describe"
)

// genericReader hides the cluster client's REST method, so describe lists through the generic
// controller-runtime client.
type genericReader struct{ describe.Reader }

// TestLeanListsReadTheSameObjects: the lean decoding of lists (the cluster client's REST path),
// paged or not, reads exactly the objects the generic client reads, in both views; no object of
// the snapshot keeps managedFields.
func TestLeanListsReadTheSameObjects(t *testing.T) {
	setup(t)
	ctx := context.Background()
	s := describetest.Large("lean-list", 3, 40)
	env.CreateNamespaces(t, s.Namespace)
	describetest.Apply(ctx, t, env.Client, s.Objects)
	for _, grouping := range []bool{true, false} {
		opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: grouping, ShowResourceSets: true}
		generic, err := describe.Fetch(ctx, genericReader{env.Client}, opts)
		if err != nil {
			t.Fatal(err)
		}
		lean, err := describe.Fetch(ctx, env.Client, opts)
		if err != nil {
			t.Fatal(err)
		}
		restore := describe.SetListPageSize(7) // 43 machines: 7 pages
		paged, err := describe.Fetch(ctx, env.Client, opts)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if len(generic.Machines) != 43 {
			t.Fatalf("generic list: %d machines, want 43", len(generic.Machines))
		}
		for _, r := range lean.Referenced {
			if r.Object != nil && r.Object.GetManagedFields() != nil {
				t.Errorf("%s %s kept its managedFields", r.Kind, r.Name)
			}
		}
		if lean.Cluster.GetManagedFields() != nil {
			t.Error("the Cluster kept its managedFields")
		}
		for _, m := range lean.Machines {
			if _, ok := m.Object["metadata"].(map[string]any)["managedFields"]; ok {
				t.Fatalf("lean list kept managedFields of %s", m.GetName())
			}
			if m.GetUID() == "" || m.GetResourceVersion() == "" || m.GetCreationTimestamp().Time.IsZero() || len(m.GetOwnerReferences()) != 1 {
				t.Fatalf("lean list lost metadata of %s: %v", m.GetName(), m.Object["metadata"])
			}
		}
		for name, got := range map[string]*describe.Snapshot{"lean": lean, "paged": paged} {
			for kind, pair := range map[string][2][]unstructured.Unstructured{
				"Machine":           {generic.Machines, got.Machines},
				"MachineSet":        {generic.MachineSets, got.MachineSets},
				"MachineDeployment": {generic.MachineDeployments, got.MachineDeployments},
			} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Errorf("grouping=%v: %s list of %s differs from the generic client's", grouping, name, kind)
				}
			}
			if !reflect.DeepEqual(generic.Referenced, got.Referenced) {
				t.Errorf("grouping=%v: %s referenced objects differ from the generic client's", grouping, name)
			}
		}
	}
}

// TestFetchPathsBuildTheSameRows: on a cluster whose machines vary in every way grouping tells
// apart (describetest.Varied), the lean streamed lists, paged or not, build exactly the rows and
// tree that the generic client's full objects build, grouped and ungrouped and with every
// condition shown; the grouped view is also the golden one, so a change of grouping fails here.
func TestFetchPathsBuildTheSameRows(t *testing.T) {
	setup(t)
	ctx := context.Background()
	s := describetest.Varied("varied")
	env.CreateNamespaces(t, s.Namespace)
	describetest.Apply(ctx, t, env.Client, s.Objects)
	base := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster}
	views := map[string]describe.ClusterRequest{
		"grouped":         {Namespace: s.Namespace, Name: s.Cluster, Grouping: true},
		"grouped-v1beta1": {Namespace: s.Namespace, Name: s.Cluster, Grouping: true, V1Beta1: true},
		"ungrouped":       base,
		"all-conditions":  {Namespace: s.Namespace, Name: s.Cluster, Grouping: true, ShowConditions: "all"},
	}
	for name, opts := range views {
		want := render(t, genericReader{env.Client}, opts)
		wantJSON := treeJSON(t, genericReader{env.Client}, opts)
		if got := render(t, env.Client, opts); !bytes.Equal(got, want) {
			t.Errorf("%s: the lean read renders\n%s\nthe full read renders\n%s", name, got, want)
		}
		if got := treeJSON(t, env.Client, opts); !bytes.Equal(got, wantJSON) {
			t.Errorf("%s: the lean read's tree differs from the full read's", name)
		}
		restore := describe.SetListPageSize(7)
		got := render(t, env.Client, opts)
		restore()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the paged lean read renders\n%s\nthe full read renders\n%s", name, got, want)
		}
		if name == "grouped" {
			checkGolden(t, "varied", want)
		}
	}
}

func treeJSON(t *testing.T, c describe.Reader, opts describe.ClusterRequest) []byte {
	t.Helper()
	tree, err := describe.Discover(context.Background(), c, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tree)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
