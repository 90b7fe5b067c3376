package move

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
)

// ErrPastNoReturn refuses to abandon a move that already deleted from the source: the target
// holds every object, verified, and only finishing the move gives one home to every cluster.
var ErrPastNoReturn = errors.New("the move is past its point of no return")

// AbandonReport is what `capctl move --abandon` did.
type AbandonReport struct {
	MoveID string `json:"moveID"`
	Scope  string `json:"scope"`
	Phase  string `json:"phase"`
	// Unpaused are the source's Clusters and ClusterClasses the move had paused, now unpaused.
	Unpaused []string `json:"unpaused"`
	// Removed are the objects the move had created in the target, now deleted from it.
	Removed []string `json:"removedFromTarget,omitempty"`
	// Left are the objects the move created in the target that are still there, and why.
	Left []string `json:"leftInTarget,omitempty"`
	// Note says what an interrupted backup's undo did.
	Note string `json:"note,omitempty"`
}

// WriteText prints the report as `capctl move --abandon` shows it.
func (r *AbandonReport) WriteText(w io.Writer) error {
	var b strings.Builder
	if r.Note != "" {
		fmt.Fprintf(&b, "Abandoned: %s\n", r.Note)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Abandoned the move %s of %s (phase %s): the source is as it was before it.\n", r.MoveID, r.Scope, r.Phase)
	fmt.Fprintf(&b, "Unpaused in the source: %d (%s).\n", len(r.Unpaused), strings.Join(r.Unpaused, ", "))
	fmt.Fprintf(&b, "Removed from the target: %d objects the move had created there.\n", len(r.Removed))
	if len(r.Left) > 0 {
		fmt.Fprintf(&b, "Left in the target (%d): remove them by hand, or re-run --abandon with the target's kubeconfig:\n", len(r.Left))
		for _, l := range r.Left {
			fmt.Fprintf(&b, "  - %s\n", l)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Abandon undoes the unfinished move (or backup) recorded in the source's journal for
// opts.Scope, before it deleted anything from the source: it unpauses what the move paused in the
// source (removing capctl's pause annotations), deletes from the target (dst; nil when it is not
// given or lost) the objects the move created there, and removes the journal. The source needs
// no copy of the objects for that: while nothing is deleted it is complete, so a journal whose
// copy Secrets were deleted by hand is undone too. It refuses a move that already deleted from
// the source (ErrPastNoReturn: finish it with --resume), and a dst that is not the move's target.
//
// Only what is provably the move's own is removed from the target: the objects of the graph are
// deleted there only while every Cluster and ClusterClass of the graph the target holds carries
// this move's pause (MovePausedAnnotation with its ID), which capctl sets only on the objects it
// created and lifts only after the source is deleted; otherwise nothing of the target is touched
// and the objects are listed.
func Abandon(ctx context.Context, src, dst *cluster.Client, opts Options) (*AbandonReport, error) {
	opts.defaults()
	return abandon(ctx, src, dst, opts)
}

// abandon is Abandon with opts already defaulted (Options.defaults).
func abandon(ctx context.Context, src, dst *cluster.Client, opts Options) (*AbandonReport, error) {
	opts.Scope = opts.Scope.resolve(src)
	target := ""
	if dst != nil {
		target = dst.Config.Host
	}
	lk, lctx, err := acquireLock(ctx, src, lockNamespaces(ctx, src, opts.Scope, false), "move --abandon", target, opts)
	if err != nil {
		return nil, err
	}
	defer lk.Release(ctx)
	ctx = lctx

	js, err := listJournals(ctx, src)
	if err != nil {
		return nil, err
	}
	var j *journal
	for _, c := range js {
		if c.namespace == journalNamespace(opts.Scope) {
			j = c
		}
	}
	if j == nil {
		return nil, fmt.Errorf("--abandon: no unfinished move or backup is recorded for %s in %s (no ConfigMap %s/%s): nothing to abandon",
			opts.Scope, src.Config.Host, journalNamespace(opts.Scope), JournalName)
	}
	rep := &AbandonReport{MoveID: j.MoveID, Scope: j.Scope.String(), Phase: j.Phase}
	switch j.Phase {
	case phaseBackup:
		rep.Note, err = undoBackup(ctx, src, j, opts)
		return rep, err
	case phaseDeleting:
		return rep, fmt.Errorf("%w: the move %s of %s (started %s) has verified every object in the target %s and deleted from the source already, so abandoning it would leave its clusters in neither cluster whole; finish it instead: capctl move --resume --to-kubeconfig <the target's kubeconfig>",
			ErrPastNoReturn, j.MoveID, j.Scope, j.Started.Format(time.RFC3339), j.Target)
	}
	if dst != nil {
		id, err := ClusterID(ctx, dst)
		if err != nil {
			return rep, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
		}
		if id != j.TargetID {
			return rep, fmt.Errorf("%w: the move %s writes to the cluster with kube-system UID %s at %s, not to %s (UID %s); pass that cluster's kubeconfig with --to-kubeconfig, or none to leave the target alone",
				ErrOtherTarget, j.MoveID, j.TargetID, j.Target, dst.Config.Host, id)
		}
	}
	if err := lk.Add(ctx, []string{j.namespace}); err != nil {
		return rep, err
	}
	opts.Scope = j.Scope
	g, err := discoverLocked(ctx, src, j.Scope, lk, allFieldOwners)
	if err != nil {
		return rep, err
	}

	// The target first: while the source is still paused nothing reconciles the clusters twice.
	if dst == nil {
		rep.Left = append(rep.Left, fmt.Sprintf("whatever of the %d objects the move created in the target %s (not given: pass --to-kubeconfig)", g.Count(), j.Target))
	} else if rep.Removed, rep.Left, err = removeCreated(ctx, dst, g, j.MoveID, opts); err != nil {
		return rep, err
	}

	// spec.paused goes back to its value in the journal's copy of the objects as they were
	// before the move; without the copy, the field is removed (the move pauses only Clusters
	// that were not paused, so it was absent or false).
	m := &mover{src: src, opts: opts, g: g, moveID: j.MoveID}
	var paused []*Node
	byRef := map[string]*Node{}
	if pre, err := readSnapshot(ctx, src, j); err == nil {
		for _, n := range pre.Moved() {
			byRef[n.Ref.Kind+"/"+n.Ref.Namespace+"/"+n.Ref.Name] = n
		}
	} else {
		opts.Log.Info("The journal's copy of the objects cannot be read: Clusters are unpaused by removing spec.paused", "reason", err.Error())
	}
	for _, r := range j.Paused {
		n := byRef[r.Kind+"/"+r.Namespace+"/"+r.Name]
		if n == nil {
			n = &Node{Ref: r, Obj: &unstructured.Unstructured{}}
			n.Obj.SetAPIVersion(r.APIVersion)
			n.Obj.SetKind(r.Kind)
		}
		paused = append(paused, n)
		rep.Unpaused = append(rep.Unpaused, r.Kind+" "+r.Namespace+"/"+r.Name)
	}
	if err := m.unpause(ctx, src, paused, "source"); err != nil {
		return rep, fmt.Errorf("abandoning the move %s: %w (run --abandon again)", j.MoveID, err)
	}
	if err := finishJournal(ctx, src, j); err != nil {
		return rep, err
	}
	sort.Strings(rep.Unpaused)
	opts.Log.Info("Abandoned the move", "moveID", j.MoveID, "unpaused", len(rep.Unpaused), "removedFromTarget", len(rep.Removed))
	return rep, nil
}

// removeCreated deletes from dst the objects of g that the move moveID created there (see
// Abandon), deepest level first, stripping their finalizers (the clusters there are paused, so
// no controller would ever remove them). It returns what it removed and, when the target does
// not hold the move's pause on every Cluster and ClusterClass it has of the graph, touches
// nothing and lists the objects left.
func removeCreated(ctx context.Context, dst *cluster.Client, g *Graph, moveID string, opts Options) (removed, left []string, err error) {
	type found struct {
		n   *Node
		obj *unstructured.Unstructured
	}
	var present [][]found
	var foreign []string
	for _, level := range g.Order {
		var lv []found
		for _, n := range level {
			if n.Global {
				continue
			}
			gk := n.Obj.GroupVersionKind().GroupKind()
			mapping, err := dst.Mapper.RESTMapping(gk)
			if err != nil {
				continue // the target does not serve the kind: nothing of it was created
			}
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(mapping.GroupVersionKind)
			if err := dst.Get(ctx, client.ObjectKey{Namespace: n.Ref.Namespace, Name: n.Ref.Name}, obj); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, nil, fmt.Errorf("reading %s in the target: %w", n.Ref, err)
			}
			if canPause(n) && obj.GetAnnotations()[MovePausedAnnotation] != moveID {
				foreign = append(foreign, fmt.Sprintf("%s/%s/%s (not paused by this move)", gk.Kind, n.Ref.Namespace, n.Ref.Name))
			}
			lv = append(lv, found{n: n, obj: obj})
		}
		present = append(present, lv)
	}
	if len(foreign) > 0 {
		for _, lv := range present {
			for _, f := range lv {
				left = append(left, fmt.Sprintf("%s/%s/%s", f.obj.GetKind(), f.obj.GetNamespace(), f.obj.GetName()))
			}
		}
		sort.Strings(left)
		return nil, left, fmt.Errorf("--abandon: the target %s holds objects of this move that it did not pause (%s): they may be another move's or a user's, so nothing was removed from the target and the source is still paused; check them, then re-run --abandon without --to-kubeconfig to undo the source only",
			dst.Config.Host, strings.Join(foreign, ", "))
	}
	for i := len(present) - 1; i >= 0; i-- {
		for _, f := range present[i] {
			uid := f.obj.GetUID()
			if len(f.obj.GetFinalizers()) > 0 {
				patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"finalizers":null,"uid":%q}}`, uid)))
				if err := dst.Patch(ctx, f.obj, patch); err != nil && !apierrors.IsNotFound(err) {
					return removed, left, fmt.Errorf("removing the finalizers of %s in the target: %w (run --abandon again)", f.n.Ref, err)
				}
			}
			if err := dst.Delete(ctx, f.obj, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
				return removed, left, fmt.Errorf("deleting %s from the target: %w (run --abandon again)", f.n.Ref, err)
			}
			removed = append(removed, f.obj.GetKind()+"/"+objectName(f.obj))
			opts.Log.V(5).Info("Removed from the target", "object", f.n.Ref.String())
		}
	}
	sort.Strings(removed)
	return removed, nil, nil
}
