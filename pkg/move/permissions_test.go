package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	capenv "github.com/capctl/capctl/pkg/env"
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
	canINames(t, src.Client, operator, ns, authz.Target, "create dockermachines.infrastructure.cluster.x-k8s.io in namespace "+ns)
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

// refusedBySource runs a move of a fresh one-cluster namespace as a source user granted
// everything but dropped, and checks the refusal (is, and every word of want) and that neither
// cluster changed.
func refusedBySource(t *testing.T, src, dst *testenv.Env, ns, user string, dropped map[string][]string, is func(error) bool, want ...string) {
	t.Helper()
	if err := src.Client.Get(context.Background(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); err != nil {
		src.CreateNamespaces(t, ns)
		b := &builder{tb: t, c: src.Client, ns: ns}
		b.addCluster("p", clusterOpts{cpCount: 1, workers: 1})
	}
	src.GrantAllBut(t, user, dropped)
	operator := src.User(t, user)
	var missing []string
	for r, verbs := range dropped {
		for _, v := range verbs {
			missing = append(missing, v+" "+r)
		}
	}
	canINames(t, operator, dst.Client, ns, authz.Source, missing...)
	// Both API servers whole (every object by resourceVersion), not only the namespace.
	before, dstBefore := testenv.Snapshot(t, src.Client), testenv.Snapshot(t, dst.Client)
	_, err := Move(context.Background(), operator, dst.Client, Options{Scope: Scope{Namespace: ns}})
	if err == nil || !is(err) {
		t.Fatalf("%s: the move was not refused as expected: %v", user, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: the refusal lacks %q:\n%v", user, w, err)
		}
	}
	testenv.Unchanged(t, src.Client, before, "the refused move (source)")
	testenv.Unchanged(t, dst.Client, dstBefore, "the refused move (target)")
}

// TestMoveRefusesAnIncompleteSourceView: a source user who cannot list two kinds of the move
// (DockerMachines, Machines) is refused before anything is paused, with both kinds and the verb
// named at once and a Role snippet; a move deletes what it listed from the source, so what it did
// not see would be left behind. One who cannot list ConfigMaps cluster-wide cannot look for
// unfinished moves' journals, and is refused the same way.
func TestMoveRefusesAnIncompleteSourceView(t *testing.T) {
	src, dst := sharedPair(t)
	const ns = "perm-source-list"
	refusedBySource(t, src, dst, ns, "source-lister", map[string][]string{
		"dockermachines.infrastructure.cluster.x-k8s.io": {"list"},
		"machines.cluster.x-k8s.io":                      {"list"},
	}, authz.IsIncomplete, "capctl move refuses to act on an incomplete view", "2 kind(s)",
		"dockermachines.infrastructure.cluster.x-k8s.io (list in namespace "+ns, "machines.cluster.x-k8s.io (list in namespace "+ns,
		"Nothing was changed", "kind: Role")
	refusedBySource(t, src, dst, ns, "journal-blind", map[string][]string{"configmaps": {"list"}},
		authz.IsIncomplete, "configmaps (list in all namespaces", "kind: ClusterRole")
}

// TestMoveRefusedForMissingSourcePermissions: a source user who can read everything but cannot
// delete Secrets nor patch Clusters (the move pauses, then deletes the source's copy) is refused
// by the preflight before the first write, with both permissions named at once.
func TestMoveRefusedForMissingSourcePermissions(t *testing.T) {
	src, dst := sharedPair(t)
	const ns = "perm-source-write"
	refusedBySource(t, src, dst, ns, "source-writer", map[string][]string{
		"secrets":                   {"delete"},
		"clusters.cluster.x-k8s.io": {"patch"},
	}, func(err error) bool { return errors.Is(err, ErrPermissions) },
		"delete secrets in namespace "+ns, "patch clusters.cluster.x-k8s.io in namespace "+ns, "source", "nothing was changed", "kind: Role")
}

// canINames checks that `capctl auth can-i move -n ns` says no on side, naming each of missing
// (a permission's start, "verb resource"), as the move itself then refuses.
func canINames(t *testing.T, src, dst *cluster.Client, ns string, side authz.Side, missing ...string) {
	t.Helper()
	e := capenv.One(src)
	e.Target = dst
	res, err := CanI(context.Background(), e, authz.CanIRequest{Command: "move", Namespace: ns})
	if err != nil || res.OK() {
		t.Fatalf("can-i move: %+v %v, want a no", res, err)
	}
	for _, sr := range res.Sides {
		if sr.Side != side {
			continue
		}
		got := fmt.Sprint(sr.Missing)
		for _, m := range missing {
			if !strings.Contains(got, m) {
				t.Errorf("can-i move does not name %q missing on the %s: %s", m, side, got)
			}
		}
	}
}
