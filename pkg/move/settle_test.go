package move

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

func settleObj(apiVersion, kind, ns, name string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": ns, "name": name}, "spec": spec}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func available(status string) []any {
	return []any{map[string]any{"type": "Available", "status": status}}
}

func TestSnapshotClustersBothContracts(t *testing.T) {
	objs := []*unstructured.Unstructured{
		// v1beta1: Available among the v1beta2 conditions.
		settleObj(vCore1, "Cluster", "ns", "old", nil, map[string]any{"v1beta2": map[string]any{"conditions": available("True")}}),
		settleObj(vCore1, "Machine", "ns", "old-1", map[string]any{"clusterName": "old", "providerID": "docker:////old-1"}, nil),
		settleObj(vCore, "Cluster", "ns", "new", nil, map[string]any{"conditions": available("False")}),
		settleObj(vCore, "Machine", "ns", "new-1", map[string]any{"clusterName": "new"}, nil),
		// Not a watched cluster, and a Machine of another namespace.
		settleObj(vCore, "Cluster", "ns", "other", nil, map[string]any{"conditions": available("True")}),
		settleObj(vCore, "Machine", "elsewhere", "old-2", map[string]any{"clusterName": "old"}, nil),
		settleObj(vInfra, "DockerMachine", "ns", "old-1", map[string]any{"providerID": "x"}, nil),
	}
	got := SnapshotClusters([]string{"ns/old", "ns/new"}, objs)
	want := SettleSnapshot{
		"ns/old": {Machines: map[string]string{"old-1": "docker:////old-1"}, Available: true},
		"ns/new": {Machines: map[string]string{"new-1": ""}, Available: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot:\n got %+v\nwant %+v", got, want)
	}
}

func TestCompareSettle(t *testing.T) {
	before := SettleSnapshot{
		"ns/a": {Machines: map[string]string{"a-1": "p1", "a-2": "p2", "a-3": "p3"}, Available: true},
		"ns/b": {Machines: map[string]string{"b-1": "q1"}, Available: true},
		"ns/c": {Machines: map[string]string{}, Available: false},
	}
	after := SettleSnapshot{
		"ns/a": {Machines: map[string]string{"a-1": "p1", "a-2": "p2-new", "a-4": "p4"}, Available: true},
		"ns/b": {Machines: map[string]string{"b-1": "q1"}, Available: false},
		"ns/c": {Machines: map[string]string{}, Available: false},
	}
	kinds := func(ps []SettleProblem) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Cluster+" "+p.Kind)
		}
		return out
	}
	want := []string{"ns/a " + SettleProviderIDChanged, "ns/a " + SettleMachineCreated, "ns/a " + SettleMachineDeleted}
	if got := kinds(CompareSettle(before, after, false)); !reflect.DeepEqual(got, want) {
		t.Errorf("during the period: %v, want %v", got, want)
	}
	// At the end of the period the lost availability counts too; a cluster that was not
	// Available before cannot lose it.
	want = append(want, "ns/b "+SettleLostAvailable)
	if got := kinds(CompareSettle(before, after, true)); !reflect.DeepEqual(got, want) {
		t.Errorf("at the end: %v, want %v", got, want)
	}
	if got := CompareSettle(before, before, true); len(got) != 0 {
		t.Errorf("no change reported %v", got)
	}
}

// TestMoveSettleCheck moves two Available clusters and, while the settle check watches the
// target, plays the target's controllers for one of them: cluster a becomes Available again but
// gets a new Machine; nobody reports cluster b Available. The check reports exactly those two.
func TestMoveSettleCheck(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "settle"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("a", clusterOpts{cpCount: 1, workers: 1})
	b.addCluster("b", clusterOpts{cpCount: 1})
	st := provisionedClusterStatus()
	st["conditions"] = append(st["conditions"].([]any), map[string]any{"type": "Available", "status": "True", "reason": "Available", "message": "",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
	for _, name := range []string{"a", "b"} {
		c := obj(vCore, "Cluster", name, nil)
		c.SetNamespace(ns)
		if err := src.Client.Status().Patch(ctx, c, client.RawPatch(types.MergePatchType, mustJSON(map[string]any{"status": st}))); err != nil {
			t.Fatal(err)
		}
	}
	var hookErr error
	opts := Options{Scope: Scope{Namespace: ns}, Settle: 3 * time.Second, PollInterval: 200 * time.Millisecond,
		Hook: func(phase string, _ int) {
			if phase != "finish" {
				return
			}
			c := obj(vCore, "Cluster", "a", nil)
			c.SetNamespace(ns)
			hookErr = dst.Client.Status().Patch(ctx, c, client.RawPatch(types.MergePatchType, mustJSON(map[string]any{"status": st})))
			m := obj(vCore, "Machine", "a-replacement", map[string]any{"clusterName": "a", "bootstrap": map[string]any{"dataSecretName": "x"},
				"infrastructureRef": ref(gInfra, "DockerMachine", "a-replacement")})
			m.SetNamespace(ns)
			if err := dst.Client.Create(ctx, m); err != nil && hookErr == nil {
				hookErr = err
			}
		}}
	rep, err := Move(ctx, src.Client, dst.Client, opts)
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	if !errors.Is(err, ErrNotSettled) || rep.Settle == nil {
		t.Fatalf("move: %v (settle %+v)", err, rep.Settle)
	}
	var got []string
	for _, p := range rep.Settle.Problems {
		got = append(got, p.Cluster+" "+p.Kind)
	}
	want := []string{ns + "/a " + SettleMachineCreated, ns + "/b " + SettleLostAvailable}
	if !reflect.DeepEqual(got, want) || rep.Settle.Clusters != 2 || rep.Settle.Polls < 5 || rep.Settle.Seconds < 2.5 {
		t.Errorf("settle: problems %v (want %v), clusters %d, polls %d, %.1fs", got, want, rep.Settle.Clusters, rep.Settle.Polls, rep.Settle.Seconds)
	}
	if !rep.Verified || len(snapshot(t, src.Client, ns)) != 0 {
		t.Errorf("the move itself did not complete: verified %v", rep.Verified)
	}
}

// TestMoveSettleFailsClosed: when the target user's permission to list Clusters is revoked right
// after the move, the settle check cannot watch what it checks: it fails naming the read, never
// reports the clusters settled.
func TestMoveSettleFailsClosed(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "settle-blind"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("a", clusterOpts{cpCount: 1})
	dst.GrantAllBut(t, "settle-watcher", nil)
	watcher := dst.User(t, "settle-watcher")
	opts := Options{Scope: Scope{Namespace: ns}, Settle: 30 * time.Second, PollInterval: 200 * time.Millisecond,
		Hook: func(phase string, _ int) {
			if phase != "finish" {
				return
			}
			dst.Revoke(t, "settle-watcher", gCore, "clusters")
			time.Sleep(time.Second) // the authorizer's cache follows the role
		}}
	rep, err := Move(ctx, src.Client, watcher, opts)
	if err == nil || errors.Is(err, ErrNotSettled) || !strings.Contains(err.Error(), "watching the moved clusters in the target") || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("move: %v (settle %+v)", err, rep.Settle)
	}
	if rep.Settle != nil && rep.Settle.Polls > 0 {
		t.Errorf("the settle check reported %d looks it could not make", rep.Settle.Polls)
	}
}
