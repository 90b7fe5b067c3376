package move

import (
	"errors"
	"strings"
	"sync"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/capctl/capctl/internal/testenv"
)

// The cross-contract pair: a management cluster on Cluster API v1.10.10 (CRDs storing v1beta1)
// and one on v1.14.0 (v1beta2), started once for the package's tests (each uses its own
// namespace). Both serve only their storage versions (testenv.ComponentCRDs says why).
var (
	contractOnce     sync.Once
	contractOld      *testenv.Env
	contractNew      *testenv.Env
	contractErr      error
	contractOldCRDs  string
	contractNewCRDs  string
	contractProvider = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker"}
)

func contractPair(t *testing.T) (old, new *testenv.Env) {
	t.Helper()
	testenv.Integration(t)
	oldCRDs := testenv.ComponentCRDs(t, "v1.10.10", contractProvider...)
	newCRDs := testenv.ComponentCRDs(t, "v1.14.0", contractProvider...)
	contractOnce.Do(func() {
		contractOldCRDs, contractNewCRDs = oldCRDs, newCRDs
		var wg sync.WaitGroup
		envs := make([]*testenv.Env, 2)
		errs := make([]error, 2)
		for i, crds := range []string{oldCRDs, newCRDs} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				envs[i], errs[i] = testenv.StartForMain(testenv.Options{CRDPaths: []string{crds}})
			}()
		}
		wg.Wait()
		for _, e := range envs {
			if e != nil {
				testenv.AfterTests(e.Stop)
			}
		}
		if contractErr = errors.Join(errs...); contractErr != nil {
			return
		}
		contractOld, contractNew = envs[0], envs[1]
		prepareManagementCluster(t, contractOld, defaultProviders("v1.10.10")...)
		prepareManagementCluster(t, contractNew, defaultProviders("v1.14.0")...)
	})
	if contractErr != nil {
		t.Fatalf("starting the v1.10 and v1.14 API servers: %v", contractErr)
	}
	if contractOld == nil {
		t.Fatal("the cross-contract API servers failed to start in an earlier test")
	}
	return contractOld, contractNew
}

// TestMoveToOlderContractRefused moves from the v1beta2 management cluster to the v1beta1 one:
// refused before anything is written, with the contracts named, and both clusters unchanged
// (no pause, no journal, no lock in the source; nothing in the target).
func TestMoveToOlderContractRefused(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const ns = "reverse"
	new.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: new.Client, ns: ns}
	b.addCluster("a", clusterOpts{cpCount: 1, workers: 1})
	before := snapshot(t, new.Client, ns)
	leasesBefore := countLeases(t, new)

	_, err := Move(ctx, new.Client, old.Client, Options{Scope: Scope{Namespace: ns}})
	if !errors.Is(err, ErrOlderContract) || !strings.Contains(err.Error(), "stores Clusters as v1beta2") || !strings.Contains(err.Error(), "stores them as v1beta1") {
		t.Fatalf("move v1beta2 -> v1beta1: %v", err)
	}
	after := snapshot(t, new.Client, ns)
	if len(after) != len(before) {
		t.Errorf("the source has %d objects, had %d: %v", len(after), len(before), keys(after))
	}
	for k, o := range before {
		a := after[k]
		if a == nil || a.GetResourceVersion() != o.GetResourceVersion() || !equality.Semantic.DeepEqual(content(a), content(o)) {
			t.Errorf("%s changed in the source", k)
		}
	}
	if n := countLeases(t, new); n != leasesBefore {
		t.Errorf("the refused move left %d leases in the source, there were %d", n, leasesBefore)
	}
	if p, _ := PendingMoves(ctx, new.Client); len(p) != 0 {
		t.Errorf("the refused move left a journal: %v", p)
	}
	if got := snapshot(t, old.Client, ns); len(got) != 0 {
		t.Errorf("the refused move wrote to the target: %v", keys(got))
	}
}

func countLeases(t *testing.T, env *testenv.Env) int {
	t.Helper()
	list := &coordinationv1.LeaseList{}
	if err := env.Client.List(testenv.Context(t), list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}
