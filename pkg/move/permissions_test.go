package move

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMoveRefusedForAMissingTargetPermission: an operator of the target who may do everything
// but create DockerMachines there is refused before the first write, with the permission and a
// Role snippet; neither cluster changes (before the preflight, the move filled the target and
// left its objects paused there).
func TestMoveRefusedForAMissingTargetPermission(t *testing.T) {
	src, dst := sharedPair(t)
	const ns = "perm-target"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("p", clusterOpts{cpCount: 1, workers: 1})

	dst.GrantAllBut(t, "target-operator", map[string][]string{"dockermachines.infrastructure.cluster.x-k8s.io": {"create"}})
	operator := dst.User(t, "target-operator")
	before := snapshot(t, src.Client, ns)
	_, err := Move(context.Background(), src.Client, operator, Options{Scope: Scope{Namespace: ns}})
	if !errors.Is(err, ErrPermissions) {
		t.Fatalf("want a permission refusal, got %v", err)
	}
	for _, want := range []string{"create dockermachines.infrastructure.cluster.x-k8s.io in namespace " + ns, "kind: Role", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	unchanged(t, before, snapshot(t, src.Client, ns))
	if got := snapshot(t, dst.Client, ns); len(got) != 0 {
		t.Errorf("the refused move wrote %d objects into the target: %v", len(got), keys(got))
	}
}

// unchanged fails the test when a refused run changed an object of the snapshot.
func unchanged(t *testing.T, before, after map[string]*unstructured.Unstructured) {
	t.Helper()
	if len(after) != len(before) {
		t.Fatalf("source changed: %d objects before, %d after", len(before), len(after))
	}
	for k, o := range before {
		if after[k] == nil || after[k].GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("source object %s changed", k)
		}
	}
}
