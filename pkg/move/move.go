package move

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/lease"
	"github.com/capctl/capctl/pkg/versions"
)

// Defaults.
const (
	DefaultParallelism = 16
	// MaxParallelism is the most concurrent writes a move accepts (the --parallelism range).
	MaxParallelism          = 256
	DefaultBlockMoveTimeout = 5 * time.Minute
)

// Options tune a move.
type Options struct {
	Scope Scope
	// Resume completes the move recorded in the source's journal (its scope wins over Scope).
	Resume bool
	// RestartTarget lets an unfinished move continue into a target cluster other than the one it
	// started with (the original was lost or rebuilt): every object is created there from the
	// journal's copy of the objects as they were before the move.
	RestartTarget bool
	// BlockMoveTimeout bounds the wait for every block-move annotation to go (one budget for all).
	BlockMoveTimeout time.Duration
	// Parallelism bounds concurrent writes within one owner level.
	Parallelism int
	// Progress is told how many objects of a phase are done.
	Progress func(phase string, done, total int)
	// Log receives progress lines.
	Log *logging.Logger
	// Hook is called after each step of a move (phase "discover", "journal", "pause", "create",
	// "verify", "deleting", "unfinalized" (a source object annotated delete-for-move and
	// stripped of its finalizers, not yet deleted), "delete", "unpause", "finish"; backups:
	// "discover", "journal", "pause", "write") with the count done so far: tests stop the
	// process there.
	Hook func(phase string, done int)
	// Now is the clock (tests).
	Now func() time.Time
	// MaxBackupSize bounds the sum of the files a restore reads (0: DefaultMaxBackupSize).
	MaxBackupSize int64
	// PollInterval of the block-move wait (default 1 s).
	PollInterval time.Duration
	// Settle is how long a finished move watches the moved clusters in the target (0: not at
	// all; `capctl move` defaults to DefaultSettle through Request).
	Settle time.Duration
	// AcceptConversionLoss moves even when converting to the target's versions loses values
	// (they are listed in the report and the journal).
	AcceptConversionLoss bool
	// LockDuration is how long a namespace lock lasts unrenewed (default DefaultLockDuration).
	LockDuration time.Duration
}

func (o *Options) defaults() {
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.BlockMoveTimeout <= 0 {
		o.BlockMoveTimeout = DefaultBlockMoveTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = logging.Discard()
	}
}

func (o *Options) hook(phase string, done int) {
	if o.Hook != nil {
		o.Hook(phase, done)
	}
}

// Report is the result of a move.
type Report struct {
	MoveID  string `json:"moveID,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	Scope   Scope  `json:"scope"`
	// Clusters and ClusterClasses moved (namespace/name).
	Clusters       []string `json:"clusters"`
	ClusterClasses []string `json:"clusterClasses"`
	// Objects is the number of objects in the move.
	Objects int `json:"objects"`
	// Created, Updated and AlreadyPresent count what this run did in the target (or, for a
	// backup, Written counts the files written); Deleted counts the objects this run deleted
	// from the source, AlreadyDeleted those an earlier run had deleted.
	Created        int         `json:"created"`
	Updated        int         `json:"updated"`
	AlreadyPresent int         `json:"alreadyPresent"`
	Written        int         `json:"written,omitempty"`
	Deleted        int         `json:"deleted"`
	AlreadyDeleted int         `json:"alreadyDeleted,omitempty"`
	KeptInSource   int         `json:"keptInSource"`
	UserPaused     []string    `json:"userPaused,omitempty"`
	Excluded       []Exclusion `json:"excluded,omitempty"`
	Warnings       []string    `json:"warnings,omitempty"`
	// Verified is true once the target was compared with the objects as they were before the
	// move and matched.
	Verified bool `json:"verified"`
	// Differences found by the verification of the target against the pre-move copy.
	Differences []Difference `json:"differences,omitempty"`
	// Contracts of the source and the target (a jump when they differ).
	Contracts Contracts `json:"contracts"`
	// Settle is what the check after the move saw (nil: not run).
	Settle *SettleReport `json:"settle,omitempty"`
	// Conversions are the objects written at another version than the source stores them.
	Conversions    []Conversion `json:"conversions,omitempty"`
	SourceRequests int64        `json:"sourceRequests"`
	TargetRequests int64        `json:"targetRequests"`
	Seconds        float64      `json:"seconds"`

	Graph *Graph `json:"-"`
}

// ErrSameCluster refuses a move whose target is its source.
var ErrSameCluster = errors.New("the target cluster is the source cluster")

// ErrVerification is returned when the target does not match the objects as they were before
// the move.
var ErrVerification = errors.New("verification found differences between the target and the objects as they were before the move")

// ErrOtherTarget is returned when an unfinished move is recorded towards another target cluster.
var ErrOtherTarget = errors.New("the unfinished move is recorded towards another target cluster")

// ClusterID identifies a cluster by the UID of its kube-system namespace (the same cluster reached
// through two URLs or kubeconfigs has one ID; a cluster rebuilt at the same URL has a new one).
func ClusterID(ctx context.Context, c client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf("reading namespace kube-system: %w", err)
	}
	return string(ns.UID), nil
}

// Plan discovers the graph for a dry run: no write, no target.
func Plan(ctx context.Context, src *cluster.Client, scope Scope) (*Graph, error) {
	g, err := Discover(ctx, src, scope)
	if err != nil {
		return nil, err
	}
	if g.Count() == 0 {
		return g, nothingToMove(scope, src)
	}
	return g, nil
}

func nothingToMove(scope Scope, src *cluster.Client) error {
	return fmt.Errorf("%w: no Cluster, ClusterClass, ClusterResourceSet or object labelled %s found in %s of %s; check -n/--namespace (or use -A)",
		ErrNothingToMove, MoveLabel, scope, src.Config.Host)
}

// Move moves the graph selected by opts.Scope from src to dst.
//
// Safety: the objects are read once, before anything changes, and that copy is kept in the
// source's journal. The target is only ever written from that copy (never from source objects a
// later phase annotated or stripped of finalizers), it is compared with that copy before the
// first delete, and an interrupted run, re-run or resumed, continues from the journal.
func Move(ctx context.Context, src, dst *cluster.Client, opts Options) (*Report, error) {
	opts.defaults()
	return moveClusters(ctx, src, dst, opts)
}

// moveClusters is Move with opts already defaulted (Options.defaults): it runs the stages of
// moveRun in order, each only once the one before it succeeded.
func moveClusters(ctx context.Context, src, dst *cluster.Client, opts Options) (*Report, error) {
	start := opts.Now()
	srcReq, dstReq := src.Requests(), dst.Requests()
	r := &moveRun{src: src, dst: dst, opts: opts, rep: &Report{}}
	defer func() {
		r.rep.SourceRequests = src.Requests() - srcReq
		r.rep.TargetRequests = dst.Requests() - dstReq
		r.rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	// --resume without -n/-A looks for the journal in every namespace; with them, only there.
	r.anywhere = r.opts.Scope.Namespace == "" && !r.opts.Scope.AllNamespaces
	r.opts.Scope = r.opts.Scope.resolve(src)

	if err := r.checkClusters(ctx); err != nil {
		return r.rep, err
	}
	// The namespace lock comes before the journal is read: what the journal says (and what the
	// source holds) only stays true while no other capctl run works on the namespace.
	lk, lctx, err := acquireLock(ctx, src, lockNamespaces(ctx, src, r.opts.Scope, r.opts.Resume && r.anywhere), "move", dst.Config.Host, r.opts)
	if err != nil {
		return r.rep, err
	}
	defer lk.Release(ctx)
	r.lk = lk
	for _, stage := range []func(context.Context) error{
		r.openJournal, r.readGraph, r.checkTarget, r.recordJournal, r.copyToTarget, r.verify, r.deleteFromSource, r.settle,
	} {
		if err := stage(lctx); err != nil {
			return r.rep, err
		}
	}
	return r.rep, nil
}

// moveRun is one Move in progress: what each stage found, for the stages after it.
type moveRun struct {
	src, dst *cluster.Client
	opts     Options
	rep      *Report
	// anywhere: --resume without -n/-A, which looks for the journal in every namespace.
	anywhere bool
	dstID    string
	lk       *lease.Set
	j        *journal // the journal this run continues (nil: none) or, from recordJournal, writes
	g, tg    *Graph   // the graph as the source stores it, and as the target does
	existing map[string]*unstructured.Unstructured
	m        *mover
}

// checkClusters refuses a target that is the source, and a move into an older contract, before
// anything is written (not even the lock).
func (r *moveRun) checkClusters(ctx context.Context) error {
	srcID, err := ClusterID(ctx, r.src)
	if err != nil {
		return fmt.Errorf("source cluster %s: %w", r.src.Config.Host, err)
	}
	if r.dstID, err = ClusterID(ctx, r.dst); err != nil {
		return fmt.Errorf("target cluster %s: %w", r.dst.Config.Host, err)
	}
	if srcID == r.dstID || r.src.Config.Host == r.dst.Config.Host {
		return fmt.Errorf("%w: %s (kubeconfig %s) and %s (kubeconfig %s) are the same cluster; pass the kubeconfig of another management cluster with --to-kubeconfig",
			ErrSameCluster, r.src.Config.Host, r.src.KubeconfigPath, r.dst.Config.Host, r.dst.KubeconfigPath)
	}
	r.rep.Contracts, err = checkContracts(ctx, r.src, r.dst, nil)
	return err
}

// openJournal finds the unfinished move this run continues (its scope wins), locks its namespace
// and checks it was recorded towards this target (or --restart-target says another one).
func (r *moveRun) openJournal(ctx context.Context) error {
	j, warnings, err := openJournal(ctx, r.src, r.opts, r.anywhere)
	r.rep.Warnings = append(r.rep.Warnings, warnings...)
	if err != nil {
		return err
	}
	r.j = j
	if j != nil {
		r.opts.Scope = j.Scope
		if err := r.lk.Add(ctx, []string{j.namespace}); err != nil {
			return err
		}
	}
	if j != nil && j.TargetID != r.dstID {
		if !r.opts.RestartTarget {
			return fmt.Errorf("%w: the move %s (started %s, phase %s) of %s was recorded towards the cluster with kube-system UID %s at %s, but %s is the cluster with UID %s (another cluster, or the same address rebuilt).\n"+
				"If the original target still exists, re-run with its kubeconfig. If it was lost or rebuilt, re-run with --resume --restart-target: capctl re-creates every object in this cluster from the journal's copy of the objects as they were before the move, then finishes the move",
				ErrOtherTarget, j.MoveID, j.Started.Format(time.RFC3339), j.Phase, j.Scope, j.TargetID, j.Target, r.dst.Config.Host, r.dstID)
		}
	} else if r.opts.RestartTarget {
		if j == nil {
			return fmt.Errorf("--restart-target: no unfinished move is recorded in %s; nothing to restart", r.src.Config.Host)
		}
		return fmt.Errorf("--restart-target: the unfinished move %s is already recorded towards %s (UID %s); re-run without --restart-target", j.MoveID, r.dst.Config.Host, r.dstID)
	}
	return nil
}

// readGraph reads the graph: the journal's copy once deleting started (the source is no longer
// complete, and what is left of it may carry delete-phase changes); a fresh discovery otherwise.
// Every namespace of the graph is locked before anything is paused.
func (r *moveRun) readGraph(ctx context.Context) error {
	log, j := r.opts.Log, r.j
	var g *Graph
	var err error
	if j != nil && j.Phase == phaseDeleting {
		log.Info("Resuming an unfinished move from its journal", "moveID", j.MoveID, "phase", j.Phase, "started", j.Started.Format(time.RFC3339))
		if g, err = readSnapshot(ctx, r.src, j); err != nil {
			return err
		}
	} else {
		if j != nil {
			log.Info("Resuming an unfinished move (nothing was deleted yet: reading the source again)", "moveID", j.MoveID, "started", j.Started.Format(time.RFC3339))
		}
		log.Info("Discovering Cluster API objects", "scope", r.opts.Scope.String())
		if g, err = discoverLocked(ctx, r.src, r.opts.Scope, r.lk, restoredFieldOwners); err != nil {
			return err
		}
		r.rep.Warnings = append(r.rep.Warnings, sanitize(g)...)
	}
	if err := r.lk.Add(ctx, graphNamespaces(g)); err != nil {
		return err
	}
	r.g = g
	r.rep.Resumed = j != nil
	r.rep.Scope = r.opts.Scope
	r.rep.Graph = g
	fillReport(r.rep, g)
	r.opts.hook("discover", g.Count())
	if g.Count() == 0 {
		if j != nil {
			return fmt.Errorf("%w; the unfinished move %s recorded in %s/%s holds nothing either: remove that ConfigMap", nothingToMove(r.opts.Scope, r.src), j.MoveID, j.namespace, JournalName)
		}
		return nothingToMove(r.opts.Scope, r.src)
	}
	log.Info("Moving Cluster API objects", "Clusters", len(r.rep.Clusters), "ClusterClasses", len(r.rep.ClusterClasses), "objects", g.Count())
	return nil
}

// checkTarget checks the target can take the graph (preflight, permissions) and reads what it
// holds of it: a fresh move (or a restart into a new target) never overwrites that; a resumed
// one brings it up to date.
func (r *moveRun) checkTarget(ctx context.Context) error {
	// An unfinished move goes on with the losses its first run accepted (the journal lists them).
	var accepted []string
	if r.j != nil {
		accepted = r.j.ConversionLosses
	}
	tg, err := preflight(ctx, r.dst, r.g, r.opts, r.rep, accepted...)
	if err != nil {
		return err
	}
	r.tg = tg
	if err := checkPermissions(ctx, r.src, r.dst, r.g, r.opts.Scope); err != nil {
		return err
	}
	if r.existing, err = listMovedKinds(ctx, r.dst, tg); err != nil {
		return fmt.Errorf("target cluster %s: %w", r.dst.Config.Host, err)
	}
	if r.j == nil || r.opts.RestartTarget {
		return refuseConflicts(r.g, r.existing, r.dst)
	}
	return nil
}

// recordJournal writes the journal (a new one for a fresh move) with the target, and, before
// the delete phase, the copy of the objects as they are before the move.
func (r *moveRun) recordJournal(ctx context.Context) error {
	r.m = &mover{src: r.src, dst: r.dst, opts: r.opts, g: r.g, tg: r.tg, uids: map[types.UID]types.UID{}}
	if r.j == nil {
		r.j = &journal{MoveID: "move-" + rand.String(8), Scope: r.opts.Scope, Source: r.src.Config.Host, Started: r.opts.Now().UTC(), Phase: phaseCreating}
	}
	j := r.j
	if r.opts.RestartTarget {
		r.opts.Log.Info("Restarting the move into a new target cluster from the journal's copy", "moveID", j.MoveID, "previousTarget", j.Target, "previousTargetID", j.TargetID, "target", r.dst.Config.Host)
		r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("the move %s continued into %s (kube-system UID %s) instead of %s (UID %s), from the journal's copy of the objects", j.MoveID, r.dst.Config.Host, r.dstID, j.Target, j.TargetID))
	}
	j.Target, j.TargetID, j.Objects = r.dst.Config.Host, r.dstID, r.g.Count()
	j.Contracts, j.ConversionLosses = r.rep.Contracts, Lost(r.rep.Conversions)
	r.m.moveID = j.MoveID
	r.rep.MoveID = j.MoveID
	if j.Phase != phaseDeleting {
		j.Paused = pausable(r.g)
		if err := writeSnapshot(ctx, r.src, j, r.g); err != nil {
			return err
		}
	}
	if err := writeJournal(ctx, r.src, j); err != nil {
		return err
	}
	r.opts.hook("journal", 0)
	return nil
}

// copyToTarget pauses the source (before the delete phase) and waits for its block-move
// annotations, then brings the target to the journal's copy. A failure before the delete phase
// unpauses the source (abortBeforeDelete).
func (r *moveRun) copyToTarget(ctx context.Context) error {
	m, j := r.m, r.j
	if j.Phase != phaseDeleting {
		if err := m.pauseSource(ctx); err != nil {
			return m.abortBeforeDelete(ctx, fmt.Errorf("pausing the source: %w", err))
		}
		if err := WaitBlockMove(ctx, r.src, r.g, r.opts); err != nil {
			return m.abortBeforeDelete(ctx, err)
		}
	}
	if err := m.converge(ctx, r.existing); err != nil {
		if j.Phase == phaseDeleting {
			return fmt.Errorf("%w; the source is already partly deleted: re-run the same command (or add --resume) to finish from the journal's copy", err)
		}
		return m.abortBeforeDelete(ctx, err)
	}
	r.rep.Created, r.rep.Updated, r.rep.AlreadyPresent = int(m.created.Load()), int(m.updated.Load()), int(m.present.Load())
	return nil
}

// verify compares the target with the objects as they were before the move, before the first
// delete: the target must hold exactly those.
func (r *moveRun) verify(ctx context.Context) error {
	r.opts.Log.Info("Verifying the target against the objects as they were before the move")
	diffs, err := r.m.verifyTarget(ctx)
	if err == nil && len(diffs) > 0 {
		r.rep.Differences = diffs
		err = fmt.Errorf("%w: %d difference(s)", ErrVerification, len(diffs))
	}
	if err != nil {
		if r.j.Phase == phaseDeleting {
			return fmt.Errorf("verifying the target: %w; nothing more was deleted: re-run the same command (or add --resume) to repair the target from the journal's copy", err)
		}
		return r.m.abortBeforeDelete(ctx, fmt.Errorf("verifying the target: %w", err))
	}
	r.rep.Verified = true
	r.opts.hook("verify", r.g.Count())
	return nil
}

// deleteFromSource records the delete phase (the point of no return), deletes the moved objects
// from the source, unpauses the target and what was kept in the source, and removes the journal.
func (r *moveRun) deleteFromSource(ctx context.Context) error {
	m, j := r.m, r.j
	if j.Phase != phaseDeleting {
		j.Phase = phaseDeleting
		if err := writeJournal(ctx, r.src, j); err != nil {
			return m.abortBeforeDelete(ctx, fmt.Errorf("recording the delete phase in the journal: %w", err))
		}
	}
	r.opts.hook("deleting", 0)
	deleted, gone, err := m.deleteSource(ctx, r.rep.Resumed)
	r.rep.Deleted, r.rep.AlreadyDeleted = deleted, gone
	if err != nil {
		return fmt.Errorf("every object is in the target (still paused, verified) but deleting from the source failed after %d objects: %w; re-run the same command (or add --resume) to finish the move", deleted, err)
	}
	if err := m.unpauseTarget(ctx); err != nil {
		return fmt.Errorf("the source is deleted but unpausing in the target failed: %w; re-run the same command (or add --resume) to finish", err)
	}
	var kept []*Node
	for _, n := range r.g.Moved() {
		if n.KeepInSource && !n.Global {
			kept = append(kept, n)
		}
	}
	if err := m.unpause(ctx, r.src, kept, "source"); err != nil {
		return fmt.Errorf("the move is complete but unpausing the objects kept in the source failed: %w; re-run the same command (or add --resume) to finish", err)
	}
	if err := finishJournal(ctx, r.src, j); err != nil {
		return err
	}
	r.opts.hook("finish", 0)
	return nil
}

// settle watches the moved clusters in the target for opts.Settle (0: not at all).
func (r *moveRun) settle(ctx context.Context) error {
	if r.opts.Settle <= 0 {
		return nil
	}
	var err error
	if r.rep.Settle, err = r.m.settle(ctx, r.g); err != nil {
		return fmt.Errorf("the move is complete, but watching the moved clusters afterwards failed: %w", err)
	}
	if n := len(r.rep.Settle.Problems); n > 0 {
		return fmt.Errorf("%w: the move is complete, but in the %s after it the target reported %d change(s) (listed in the report): check the clusters' providers adopted what moved", ErrNotSettled, r.opts.Settle, n)
	}
	return nil
}

// openJournal finds the journal this run continues, and undoes interrupted backups.
func openJournal(ctx context.Context, src *cluster.Client, opts Options, anywhere bool) (*journal, []string, error) {
	js, err := listJournals(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	var moves []*journal
	var warnings []string
	want := journalNamespace(opts.Scope)
	for _, j := range js {
		if j.Phase != phaseBackup {
			moves = append(moves, j)
			continue
		}
		w, err := settleBackup(ctx, src, j, want, opts)
		if err != nil {
			return nil, nil, err
		}
		warnings = append(warnings, w)
	}
	var j *journal
	for _, m := range moves {
		if m.namespace == want {
			j = m
		}
	}
	if opts.Resume && j == nil {
		switch {
		case !anywhere:
			return nil, warnings, fmt.Errorf("--resume: no unfinished move is recorded in namespace %s of %s (no ConfigMap %s there; %d elsewhere); nothing to resume there", want, src.Config.Host, JournalName, len(moves))
		case len(moves) == 0:
			return nil, warnings, fmt.Errorf("--resume: no unfinished move is recorded in %s (no ConfigMap %s in any namespace); nothing to resume", src.Config.Host, JournalName)
		case len(moves) == 1:
			j = moves[0]
		default:
			var where []string
			for _, m := range moves {
				where = append(where, m.namespace+" ("+m.Scope.String()+")")
			}
			return nil, warnings, fmt.Errorf("several unfinished moves are recorded, in namespaces %s: pass -n with the one to resume", strings.Join(where, ", "))
		}
	}
	if j != nil && !opts.Resume && !sameScope(j.Scope, opts.Scope) {
		return nil, warnings, fmt.Errorf("%s; finish it before moving %s", j.unfinished(), opts.Scope)
	}
	scope := opts.Scope
	if j != nil {
		scope = j.Scope
	}
	// Any other unfinished move over the same objects (a -A move's journal lives in "default",
	// a namespace's in that namespace) wins: moving its objects elsewhere would leave its target
	// with paused copies and two targets owning one infrastructure.
	for _, m := range moves {
		if m != j && overlaps(m, scope) {
			return nil, warnings, fmt.Errorf("%s (journal %s/%s); this run (%s) would move the same objects elsewhere: finish that move first with `capctl move --resume -n %s --to-kubeconfig <its target>`",
				m.unfinished(), m.namespace, JournalName, scope, m.namespace)
		}
	}
	return j, warnings, nil
}

// sanitize removes from the discovered objects what an earlier, interrupted run left on them:
// capctl's own pause (the object stays paused in the source, and is created paused in the target
// anyway) and a delete-for-move annotation, which must never reach the target.
func sanitize(g *Graph) []string {
	var stale []string
	for _, n := range g.Moved() {
		ann := n.Obj.GetAnnotations()
		if _, ok := ann[MovePausedAnnotation]; ok && !n.UserPaused {
			n.pausedByUs = true
			delete(ann, MovePausedAnnotation)
			if isClusterNode(n) {
				unstructured.RemoveNestedField(n.Obj.Object, "spec", "paused")
			} else if isClusterClassNode(n) {
				delete(ann, PausedAnnotation)
			}
		}
		if _, ok := ann[DeleteForMoveAnnotation]; ok {
			delete(ann, DeleteForMoveAnnotation)
			stale = append(stale, n.Ref.String())
		}
		if len(ann) == 0 {
			ann = nil
		}
		n.Obj.SetAnnotations(ann)
	}
	if len(stale) == 0 {
		return nil
	}
	sort.Strings(stale)
	return []string{fmt.Sprintf("%d source objects carry %s from an earlier interrupted move (%s): it is not copied to the target; check their finalizers in the target",
		len(stale), DeleteForMoveAnnotation, strings.Join(first(stale, 5), ", "))}
}

func first(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(append([]string{}, s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
}

func refuseConflicts(g *Graph, existing map[string]*unstructured.Unstructured, dst *cluster.Client) error {
	var clash []string
	for _, n := range g.Moved() {
		if !n.Global && !n.KeepInSource && existing[objKey(n)] != nil {
			clash = append(clash, n.Ref.String())
		}
	}
	if len(clash) == 0 {
		return nil
	}
	return fmt.Errorf("cannot start the move: the target cluster %s already holds %d of the objects to move: %s; remove them from the target (or, if an earlier move was interrupted and its journal lost, move into a clean target)",
		dst.Config.Host, len(clash), strings.Join(first(clash, 10), ", "))
}

func fillReport(rep *Report, g *Graph) {
	rep.Objects = g.Count()
	rep.Clusters, rep.ClusterClasses, rep.UserPaused, rep.KeptInSource = nil, nil, nil, 0
	for _, n := range g.Moved() {
		switch {
		case isClusterNode(n):
			rep.Clusters = append(rep.Clusters, n.Ref.Namespace+"/"+n.Ref.Name)
		case isClusterClassNode(n):
			rep.ClusterClasses = append(rep.ClusterClasses, n.Ref.Namespace+"/"+n.Ref.Name)
		}
		if n.KeepInSource || n.Global {
			rep.KeptInSource++
		}
		if n.UserPaused {
			rep.UserPaused = append(rep.UserPaused, n.Ref.String())
		}
	}
	sort.Strings(rep.Clusters)
	sort.Strings(rep.ClusterClasses)
	rep.Excluded = g.Excluded
	rep.Warnings = append(rep.Warnings, g.Warnings...)
}

// abortBeforeDelete unpauses the source after a failure before anything was deleted, and says so.
func (m *mover) abortBeforeDelete(ctx context.Context, cause error) error {
	// Use a fresh context: the caller's may be the reason we stop (Ctrl-C).
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	written := m.created.Load() + m.updated.Load() + m.present.Load()
	if err := m.unpause(uctx, m.src, m.g.Moved(), "source"); err != nil {
		return fmt.Errorf("%w; unpausing the source ALSO failed (%v): the source is intact but Clusters paused by capctl (annotation %s) stay paused until you re-run the move", cause, err, MovePausedAnnotation)
	}
	return fmt.Errorf("%w\nNothing was deleted: the source is intact and unpaused. %d of %d objects are in the target %s, where they stay paused; re-run the same command (or add --resume) to complete the move",
		cause, written, m.g.Count(), m.dst.Config.Host)
}

// preflight checks the target can take the graph and returns the graph as the target stores
// it (converted to the target's versions, rep.Conversions): it refuses values the conversion
// would lose unless opts.AcceptConversionLoss.
func preflight(ctx context.Context, dst *cluster.Client, g *Graph, opts Options, rep *Report, accepted ...string) (*Graph, error) {
	versions, err := targetVersions(ctx, dst)
	if err != nil {
		return nil, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	tg, convs, problems := toTarget(g, versions)
	rep.Conversions = convs
	if err := Preflight(ctx, dst, g, tg, problems...); err != nil {
		return nil, err
	}
	if lost := Lost(convs); len(lost) > 0 && !opts.AcceptConversionLoss && !subset(lost, accepted) {
		return nil, fmt.Errorf("%w (%s): %d value(s) would not survive the conversion:\n  - %s\nNothing was written. Change or remove them in the source first, or pass --accept-conversion-loss to move without them (the journal records what was lost)",
			ErrConversionLoss, rep.Contracts, len(lost), strings.Join(lost, "\n  - "))
	}
	return tg, nil
}

// subset tells whether every string of a is in b.
func subset(a, b []string) bool {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	for _, s := range a {
		if !in[s] {
			return false
		}
	}
	return true
}

// Preflight checks the target can take the graph (tg: as the target stores it): the same
// providers at the same or newer versions, every moved kind served, every cluster provisioned;
// extra are problems found before (conversions that cannot be done).
func Preflight(ctx context.Context, dst *cluster.Client, g, tg *Graph, extra ...string) error {
	problems := append([]string(nil), extra...)
	dstProviders, err := inventory.List(ctx, dst)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	problems = append(problems, compareProviders(g.Providers, dstProviders)...)
	seen := map[string]bool{}
	for _, n := range tg.Moved() {
		gvk := n.Obj.GroupVersionKind()
		if seen[gvk.String()] {
			continue
		}
		seen[gvk.String()] = true
		if _, err := dst.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				problems = append(problems, fmt.Sprintf("kind %s (%s) is not served by the target cluster: install its provider there (capctl init)", gvk.Kind, gvk.GroupVersion()))
				continue
			}
			return fmt.Errorf("target cluster %s: resolving %s: %w", dst.Config.Host, gvk, err)
		}
	}
	problems = append(problems, provisioningProblems(g)...)
	if len(problems) > 0 {
		return fmt.Errorf("cannot start the move:\n  - %s", strings.Join(problems, "\n  - "))
	}
	return nil
}

func compareProviders(src, dst []inventory.Provider) []string {
	var out []string
	for i, step := range providerSteps(src, dst) {
		switch s := src[i]; step.Action {
		case "upgrade":
			out = append(out, fmt.Sprintf("provider %s in the target cluster is older than in the source cluster (source: %s, target: %s): upgrade it first", s.ManifestLabel(), s.Version, step.TargetVersion))
		case "install":
			out = append(out, fmt.Sprintf("provider %s (%s) not found in the target cluster: install it there (capctl init)", s.ManifestLabel(), s.Version))
		}
	}
	return out
}

// providerSteps compares each source provider with the target's, by provider and version: the
// target must run each at the same or a newer version.
func providerSteps(src, dst []inventory.Provider) []ProviderStep {
	out := make([]ProviderStep, 0, len(src))
	for _, s := range src {
		step := ProviderStep{Provider: s.ManifestLabel(), Type: string(s.Type), SourceVersion: s.Version, Action: "install"}
		for _, d := range dst {
			if d.ProviderName != s.ProviderName || d.Type != s.Type {
				continue
			}
			step.TargetVersion, step.Action = d.Version, "ok"
			sv, err1 := versions.Parse(s.Version)
			dv, err2 := versions.Parse(d.Version)
			if err1 == nil && err2 == nil && dv.LessThan(sv) {
				step.Action = "upgrade"
			}
			break
		}
		out = append(out, step)
	}
	return out
}

// provisioningProblems names the Clusters and Machines that are not ready to move.
func provisioningProblems(g *Graph) []string {
	var out []string
	for _, n := range g.Moved() {
		o := n.Obj.Object
		if !strings.HasPrefix(n.Ref.APIVersion, "cluster.x-k8s.io/") {
			continue
		}
		name := n.Ref.Namespace + "/" + n.Ref.Name
		switch n.Ref.Kind {
		case "Cluster":
			infra, ok, _ := unstructured.NestedBool(o, "status", "initialization", "infrastructureProvisioned")
			if !ok {
				infra, _, _ = unstructured.NestedBool(o, "status", "infrastructureReady") // v1beta1
			}
			if !infra {
				out = append(out, fmt.Sprintf("Cluster %s is still provisioning its infrastructure", name))
			}
			if _, hasCP, _ := unstructured.NestedMap(o, "spec", "controlPlaneRef"); hasCP {
				cp, ok, _ := unstructured.NestedBool(o, "status", "initialization", "controlPlaneInitialized")
				if !ok {
					cp, _, _ = unstructured.NestedBool(o, "status", "controlPlaneReady") // v1beta1
				}
				if !cp || !conditionTrue(o, "ControlPlaneInitialized") {
					out = append(out, fmt.Sprintf("the control plane of Cluster %s is not initialized yet", name))
				}
			}
		case "Machine":
			if _, ok, _ := unstructured.NestedMap(o, "status", "nodeRef"); !ok {
				out = append(out, fmt.Sprintf("Machine %s is still provisioning its node (no status.nodeRef)", name))
			}
		}
	}
	return out
}

func conditionTrue(o map[string]any, condType string) bool {
	for _, path := range [][]string{{"status", "conditions"}, {"status", "v1beta2", "conditions"}} {
		conds, _, _ := unstructured.NestedSlice(o, path...)
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == condType {
				return m["status"] == "True"
			}
		}
	}
	return false
}

func isClusterNode(n *Node) bool {
	return n.Ref.Kind == "Cluster" && strings.HasPrefix(n.Ref.APIVersion, "cluster.x-k8s.io/")
}

func isClusterClassNode(n *Node) bool {
	return n.Ref.Kind == "ClusterClass" && strings.HasPrefix(n.Ref.APIVersion, "cluster.x-k8s.io/")
}

// fieldOwners is which of an object's field owners (metadata.managedFields) a listing keeps.
type fieldOwners bool

const (
	// allFieldOwners keeps them all: a backup holds the objects whole.
	allFieldOwners fieldOwners = true
	// restoredFieldOwners keeps only those a move puts back (dropUnrestoredFieldOwners).
	restoredFieldOwners fieldOwners = false
)

// dropUnrestoredFieldOwners removes o's field owners unless a move restores them: a move puts
// them back in the target only where a server-side applier owns some of o's fields (place), so
// the rest (often a third of an object) is dropped as soon as it is listed, not carried through
// the move, its journal and its comparisons.
func dropUnrestoredFieldOwners(o *unstructured.Unstructured) {
	md, _ := o.Object["metadata"].(map[string]any)
	mf, _ := md["managedFields"].([]any)
	for _, e := range mf { // read as listed: GetManagedFields would convert every entry
		if e, _ := e.(map[string]any); e["operation"] == string(metav1.ManagedFieldsOperationApply) {
			return
		}
	}
	delete(md, "managedFields")
}

func hasApplyManager(mf []metav1.ManagedFieldsEntry) bool {
	for _, e := range mf {
		if e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
