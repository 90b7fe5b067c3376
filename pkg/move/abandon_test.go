package move

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

// requireAsBefore checks that the source holds exactly what it held before the move (labels,
// annotations, finalizers, owners, spec, data; nothing paused by capctl, no journal) and that
// the target holds nothing of it.
func requireAsBefore(t *testing.T, before map[string]*unstructured.Unstructured, src, dst *cluster.Client, ns string, targetEmpty bool) {
	t.Helper()
	got := snapshot(t, src, ns)
	if len(got) != len(before) {
		t.Errorf("source: %d objects, %d before the move: %v", len(got), len(before), keys(got))
	}
	for _, k := range keys(before) {
		b, g := before[k], got[k]
		if g == nil {
			t.Errorf("%s: missing in the source", k)
			continue
		}
		requireSameObject(t, k, b, g)
	}
	if targetEmpty {
		if left := snapshot(t, dst, ns); len(left) != 0 {
			t.Errorf("left in the target: %v", keys(left))
		}
	}
}

// TestMoveAbandon kills the move process before it deleted anything (after pausing, half-way
// through creating, after verifying), then abandons it with --abandon: the source is exactly as
// before the move and unpaused, the target holds nothing the move created, the journal is gone,
// and a new move of the namespace then works. Also: abandoning when the journal's copy Secrets
// were deleted by hand (the source is complete, so the copy is not needed); abandoning without
// the target (the source is undone, the target's objects are listed); refusals for a move past
// its point of no return, for another cluster given as the target, and for a namespace without
// an unfinished move.
func TestMoveAbandon(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	for _, row := range []struct {
		name, phase string
		at          int
		dropCopy    bool // delete the journal's copy Secrets before abandoning
		noTarget    bool // abandon without --to-kubeconfig
	}{
		{name: "pause", phase: "pause", at: 1},
		{name: "create-half", phase: "create", at: faultFleetSize / 2},
		{name: "verify", phase: "verify", at: 0},
		{name: "create-half-copy-deleted", phase: "create", at: faultFleetSize / 2, dropCopy: true},
		{name: "create-half-no-target", phase: "create", at: faultFleetSize / 2, noTarget: true},
	} {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			ns := "abandon-" + row.name
			total := faultFleet(t, src, ns)
			before := snapshot(t, src.Client, ns)
			faultChild(t, "move", src, dst, ns, "", row.phase, row.at, "")
			if row.dropCopy {
				if err := src.Client.DeleteAllOf(ctx, &corev1.Secret{}, client.InNamespace(ns), client.HasLabels{journalDataLabel}); err != nil {
					t.Fatal(err)
				}
			}
			var target *cluster.Client
			if !row.noTarget {
				target = dst.Client
			}
			rep, err := Abandon(ctx, src.Client, target, Options{Scope: Scope{Namespace: ns}})
			if err != nil {
				t.Fatalf("abandon: %v", err)
			}
			if len(rep.Unpaused) == 0 || rep.MoveID == "" {
				t.Errorf("report: %+v", rep)
			}
			requireAsBefore(t, before, src.Client, dst.Client, ns, !row.noTarget)
			if row.noTarget {
				if len(rep.Left) == 0 || len(snapshot(t, dst.Client, ns)) == 0 {
					t.Errorf("without the target, the report lists nothing left there: %+v", rep)
				}
				if _, err := Abandon(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}}); err == nil || !strings.Contains(err.Error(), "nothing to abandon") {
					t.Errorf("a second abandon, the journal gone: %v", err)
				}
				return
			}
			if row.phase != "pause" && len(rep.Removed) == 0 {
				t.Errorf("nothing reported removed from the target after %s: %+v", row.name, rep)
			}
			// The namespace moves again from scratch.
			mrep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
			if err != nil || mrep.Created != total || mrep.Resumed {
				t.Fatalf("a new move after the abandon: err %v, created %d of %d, resumed %v", err, mrep.Created, total, mrep.Resumed)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		const ns = "abandon-refused"
		faultFleet(t, src, ns)
		if _, err := Abandon(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}}); err == nil || !strings.Contains(err.Error(), "nothing to abandon") {
			t.Errorf("no unfinished move: %v", err)
		}
		faultChild(t, "move", src, dst, ns, "", "create", faultFleetSize/2, "")
		mid := snapshot(t, src.Client, ns)
		midTarget := snapshot(t, dst.Client, ns)
		if _, err := Abandon(ctx, src.Client, src.Client, Options{Scope: Scope{Namespace: ns}}); !errors.Is(err, ErrOtherTarget) {
			t.Errorf("another cluster as the target: %v", err)
		}
		// A refused abandon writes nothing, on either side (by resourceVersion).
		unchanged(t, mid, snapshot(t, src.Client, ns))
		unchanged(t, midTarget, snapshot(t, dst.Client, ns))
		// Finish the move up to its delete phase, then kill it: abandoning is refused.
		faultChild(t, "move", src, dst, ns, "", "delete", 1, "")
		late, lateTarget := snapshot(t, src.Client, ns), snapshot(t, dst.Client, ns)
		_, err := Abandon(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
		if !errors.Is(err, ErrPastNoReturn) || !strings.Contains(err.Error(), "--resume") {
			t.Errorf("past the point of no return: %v", err)
		}
		unchanged(t, late, snapshot(t, src.Client, ns))
		unchanged(t, lateTarget, snapshot(t, dst.Client, ns))
		if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}, Resume: true}); err != nil {
			t.Errorf("--resume after the refused abandon: %v", err)
		}
	})
}
