package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/lease"
)

// clustersIn counts the Clusters of ns in a cluster.
func clustersIn(t *testing.T, env *testenv.Env, ns string) int {
	t.Helper()
	n := 0
	for k := range snapshot(t, env.Client, ns) {
		if strings.HasPrefix(k, "Cluster/") {
			n++
		}
	}
	return n
}

// TestConcurrentMovesOneWins starts two moves of one namespace at once, to two targets and to
// the same target, ten times each: exactly one moves it; the other is refused by the lock (or,
// starting after the first finished, finds nothing left to move). Before the lock both
// succeeded and every cluster ended up live in both targets.
func TestConcurrentMovesOneWins(t *testing.T) {
	src, dst1 := sharedPair(t)
	dst2 := testenv.Start(t, testenv.Options{CRDPaths: pairCRDs})
	prepareManagementCluster(t, dst2)
	ctx := testenv.Context(t)
	for _, sameTarget := range []bool{false, true} {
		for i := range 10 {
			ns := fmt.Sprintf("race-%v-%d", sameTarget, i)
			src.CreateNamespaces(t, ns)
			b := &builder{tb: t, c: src.Client, ns: ns}
			b.addCluster("r", clusterOpts{cpCount: 1, workers: 1})
			targets := []*testenv.Env{dst1, dst2}
			if sameTarget {
				targets = []*testenv.Env{dst1, dst1}
			}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for k := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[k] = Move(ctx, src.Client, targets[k].Client, Options{Scope: Scope{Namespace: ns}})
				}()
			}
			wg.Wait()
			ok := 0
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, ErrLocked):
					if !strings.Contains(err.Error(), "namespace "+ns+" is locked") || !strings.Contains(err.Error(), "running since") {
						t.Errorf("%s: the loser's refusal does not name the lock and its holder: %v", ns, err)
					}
				case errors.Is(err, ErrNothingToMove), errors.Is(err, ErrNamespaceNotFound):
					// The loser started after the winner had finished (the subtest below holds
					// the winner inside its locked section to prove the lock itself).
				default:
					t.Errorf("%s: unexpected error: %v", ns, err)
				}
			}
			if ok != 1 {
				t.Fatalf("%s: %d moves succeeded (errors: %v)", ns, ok, errs)
			}
			live := clustersIn(t, dst1, ns)
			if !sameTarget {
				live += clustersIn(t, dst2, ns)
			}
			if live != 1 {
				t.Fatalf("%s: the Cluster exists %d times across the targets", ns, live)
			}
			if n := clustersIn(t, src, ns); n != 0 {
				t.Fatalf("%s: %d Clusters left in the source", ns, n)
			}
		}
	}
	t.Run("a second move while the first holds the lock", func(t *testing.T) {
		secondMoveRefusedWhileTheFirstRuns(t, src, dst1, dst2)
	})
}

// TestMoveRefusedWhileLocked: a lock held by a live process refuses a move and a backup of the
// namespace in the source, and a restore in the target, naming the holder, its target and since
// when, and changes nothing.
func TestMoveRefusedWhileLocked(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "locked"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("l", clusterOpts{cpCount: 1})
	lk, _, err := lease.Acquire(ctx, src.Client, []string{ns}, lease.Info{Name: LockName, Operation: "move", Target: "https://other-target", Scope: "namespace " + ns})
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, src.Client, ns)
	_, err = Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
	var le *lease.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("the move was not refused by the lock: %v", err)
	}
	for _, want := range []string{"https://other-target", "running since", "pid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	_, err = ToDirectory(ctx, src.Client, t.TempDir()+"/backup", Options{Scope: Scope{Namespace: ns}})
	if !errors.As(err, &le) {
		t.Fatalf("the backup was not refused by the lock: %v", err)
	}
	unchanged(t, before, snapshot(t, src.Client, ns))
	if n := clustersIn(t, dst, ns); n != 0 {
		t.Errorf("the refused move wrote %d Clusters into the target", n)
	}
	lk.Release(ctx)

	// A restore takes the lock in its target: one held there refuses it before the first write.
	dir := t.TempDir() + "/backup"
	if _, err := ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}}); err != nil {
		t.Fatalf("the backup after the lock was released: %v", err)
	}
	dst.CreateNamespaces(t, ns)
	dlk, _, err := lease.Acquire(ctx, dst.Client, []string{ns}, lease.Info{Name: LockName, Operation: "move", Target: "https://third-target", Scope: "namespace " + ns})
	if err != nil {
		t.Fatal(err)
	}
	dstBefore := snapshot(t, dst.Client, ns)
	_, err = FromDirectory(ctx, dst.Client, dir, Options{})
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "https://third-target") {
		t.Fatalf("the restore was not refused by the lock in its target: %v", err)
	}
	unchanged(t, dstBefore, snapshot(t, dst.Client, ns))
	dlk.Release(ctx)

	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}}); err != nil {
		t.Fatalf("the move after the lock was released: %v", err)
	}
}

// TestAllNamespacesHonoursUnfinishedJournal: a move of one namespace stopped half-way leaves its
// journal; `move -A` to another target then refuses (ten runs) instead of moving that namespace
// elsewhere, and the resumed move still finishes into its own target.
func TestAllNamespacesHonoursUnfinishedJournal(t *testing.T) {
	src, dst1 := sharedPair(t)
	dst2 := testenv.Start(t, testenv.Options{CRDPaths: pairCRDs})
	prepareManagementCluster(t, dst2)
	ctx := testenv.Context(t)
	const ns = "journal-a"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("j", clusterOpts{cpCount: 1})
	stopped := errors.New("stopped by the test")
	sctx, cancel := context.WithCancelCause(ctx)
	_, err := Move(sctx, src.Client, dst1.Client, Options{Scope: Scope{Namespace: ns}, Hook: func(phase string, _ int) {
		if phase == "journal" {
			cancel(stopped)
		}
	}})
	if err == nil {
		t.Fatal("the stopped move succeeded")
	}
	if pending, _ := PendingMoves(ctx, src.Client); len(pending) == 0 {
		t.Fatal("the stopped move left no journal")
	}
	before := snapshot(t, src.Client, ns)
	for i := range 10 {
		_, err := Move(ctx, src.Client, dst2.Client, Options{Scope: Scope{AllNamespaces: true}})
		if err == nil || !strings.Contains(err.Error(), "--resume -n "+ns) {
			t.Fatalf("run %d: move -A did not refuse over the unfinished journal of %s: %v", i, ns, err)
		}
		if n := clustersIn(t, dst2, ns); n != 0 {
			t.Fatalf("run %d: move -A moved %d Clusters of %s elsewhere", i, n, ns)
		}
		unchanged(t, before, snapshot(t, src.Client, ns))
	}
	if _, err := Move(ctx, src.Client, dst1.Client, Options{Scope: Scope{Namespace: ns}, Resume: true}); err != nil {
		t.Fatalf("resuming the unfinished move into its own target: %v", err)
	}
	if n := clustersIn(t, dst1, ns); n != 1 {
		t.Fatalf("after the resume the first target holds %d Clusters of %s", n, ns)
	}
}

// secondMoveRefusedWhileTheFirstRuns: a move held inside its locked section (after
// discovery) while a second move of the same namespace starts towards another target: the second
// is refused by the lock, naming the first's target and since when, and changes nothing; the
// first then finishes. The race test above cannot tell a lock refusal from a loser that started
// after the winner had finished; this one can.
// (Run by TestConcurrentMovesOneWins, whose second target it shares.)
func secondMoveRefusedWhileTheFirstRuns(t *testing.T, src, dst1, dst2 *testenv.Env) {
	ctx := testenv.Context(t)
	const ns = "held"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("h", clusterOpts{cpCount: 1, workers: 1})

	inside, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := Move(ctx, src.Client, dst1.Client, Options{Scope: Scope{Namespace: ns}, Hook: func(phase string, _ int) {
			if phase == "discover" {
				close(inside)
				<-release
			}
		}})
		first <- err
	}()
	select {
	case <-inside:
	case err := <-first:
		t.Fatalf("the first move ended before its locked section: %v", err)
	}
	_, err := Move(ctx, src.Client, dst2.Client, Options{Scope: Scope{Namespace: ns}})
	close(release)
	var le *lease.LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("the second move was not refused by the lock: %v", err)
	}
	for _, want := range []string{"namespace " + ns + " is locked", dst1.Client.Config.Host, "running since", "pid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if n := clustersIn(t, dst2, ns); n != 0 {
		t.Errorf("the refused move wrote %d Clusters into its target", n)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first move, released: %v", err)
	}
	if n := clustersIn(t, dst1, ns); n != 1 {
		t.Errorf("%d Clusters in the first move's target, want 1", n)
	}
	if n := clustersIn(t, src, ns); n != 0 {
		t.Errorf("%d Clusters left in the source", n)
	}
}
