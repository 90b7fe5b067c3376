package move

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
)

// Defaults.
const (
	DefaultParallelism      = 16
	DefaultBlockMoveTimeout = 5 * time.Minute
)

// Options tune a move.
type Options struct {
	Scope Scope
	// Resume completes the move recorded in the source's journal (its scope wins over Scope).
	Resume bool
	// BlockMoveTimeout bounds the wait for every block-move annotation to go (one budget for all).
	BlockMoveTimeout time.Duration
	// Parallelism bounds concurrent writes within one owner level.
	Parallelism int
	// Progress is told how many objects of a phase are done.
	Progress func(phase string, done, total int)
	// Log receives progress lines.
	Log *logging.Logger
	// AfterCreate is called after each object created in the target (tests inject faults with it).
	AfterCreate func(created int)
	// Now is the clock (tests).
	Now func() time.Time
	// PollInterval of the block-move wait (default 1 s).
	PollInterval time.Duration
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
}

// Report is the result of a move.
type Report struct {
	MoveID  string `json:"moveID,omitempty"`
	Resumed bool   `json:"resumed,omitempty"`
	Scope   Scope  `json:"scope"`
	// Clusters and ClusterClasses moved (namespace/name).
	Clusters       []string    `json:"clusters"`
	ClusterClasses []string    `json:"clusterClasses"`
	Objects        int         `json:"objects"`
	Created        int         `json:"created"`
	Updated        int         `json:"updated"`
	Deleted        int         `json:"deleted"`
	KeptInSource   int         `json:"keptInSource"`
	UserPaused     []string    `json:"userPaused,omitempty"`
	Excluded       []Exclusion `json:"excluded,omitempty"`
	Warnings       []string    `json:"warnings,omitempty"`
	// Differences found by the verification of the target against the source.
	Differences    []Difference `json:"differences,omitempty"`
	SourceRequests int64        `json:"sourceRequests"`
	TargetRequests int64        `json:"targetRequests"`
	Seconds        float64      `json:"seconds"`

	Graph *Graph `json:"-"`
}

// ErrSameCluster refuses a move whose target is its source.
var ErrSameCluster = errors.New("the target cluster is the source cluster")

// ErrVerification is returned when the target does not match the source after a move.
var ErrVerification = errors.New("verification found differences between source and target")

// ClusterID identifies a cluster by the UID of its kube-system namespace (the same cluster reached
// through two URLs or kubeconfigs has one ID).
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

// mover holds the state of one run.
type mover struct {
	src, dst *cluster.Client
	opts     Options
	g        *Graph
	moveID   string

	mu      sync.Mutex
	uids    map[types.UID]types.UID // source UID -> target UID
	created atomic.Int64
	updated atomic.Int64
	paused  []*Node // nodes capctl paused in the source in this or an earlier run
}

// Move moves the graph selected by opts.Scope from src to dst.
func Move(ctx context.Context, src, dst *cluster.Client, opts Options) (*Report, error) {
	opts.defaults()
	start := opts.Now()
	srcReq, dstReq := src.Requests(), dst.Requests()
	rep := &Report{}
	defer func() {
		rep.SourceRequests = src.Requests() - srcReq
		rep.TargetRequests = dst.Requests() - dstReq
		rep.Seconds = opts.Now().Sub(start).Seconds()
	}()
	log := opts.Log

	srcID, err := ClusterID(ctx, src)
	if err != nil {
		return rep, fmt.Errorf("source cluster %s: %w", src.Config.Host, err)
	}
	dstID, err := ClusterID(ctx, dst)
	if err != nil {
		return rep, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	if srcID == dstID || src.Config.Host == dst.Config.Host {
		return rep, fmt.Errorf("%w: %s (kubeconfig %s) and %s (kubeconfig %s) are the same cluster; pass the kubeconfig of another management cluster with --to-kubeconfig",
			ErrSameCluster, src.Config.Host, src.KubeconfigPath, dst.Config.Host, dst.KubeconfigPath)
	}

	// The journal of an unfinished move decides whether this run resumes it.
	if opts.Scope.Namespace == "" && !opts.Scope.AllNamespaces {
		opts.Scope.Namespace = src.Namespace
	}
	var j *journal
	if opts.Resume {
		j, err = findJournal(ctx, src, journalNamespace(opts.Scope))
	} else {
		j, err = readJournal(ctx, src, journalNamespace(opts.Scope))
	}
	if err != nil {
		return rep, err
	}
	switch {
	case j == nil && opts.Resume:
		return rep, fmt.Errorf("--resume: no unfinished move is recorded in %s (no ConfigMap %s in any namespace); nothing to resume", src.Config.Host, JournalName)
	case j != nil && j.TargetID != dstID:
		return rep, fmt.Errorf("an unfinished move (%s, started %s, phase %s) of %s is recorded towards another target cluster (%s); finish it first: re-run with --resume and that cluster's kubeconfig",
			j.MoveID, j.Started.Format(time.RFC3339), j.Phase, j.Scope, j.Target)
	case j != nil && !opts.Resume && !sameScope(j.Scope, opts.Scope):
		return rep, fmt.Errorf("an unfinished move (%s) of %s is recorded; finish it with `capctl move --resume` before moving %s", j.MoveID, j.Scope, opts.Scope)
	case j != nil:
		log.Info("Resuming an unfinished move", "moveID", j.MoveID, "phase", j.Phase, "started", j.Started.Format(time.RFC3339))
		opts.Scope = j.Scope
		rep.Resumed = true
	}
	rep.Scope = opts.Scope

	log.Info("Discovering Cluster API objects", "scope", opts.Scope.String())
	g, err := Discover(ctx, src, opts.Scope)
	if err != nil {
		return rep, err
	}
	rep.Graph = g
	fillReport(rep, g)
	if g.Count() == 0 {
		if j != nil && j.Phase == phaseDeleting {
			// Everything was already deleted from the source by the earlier run.
			log.Info("Nothing left in the source; finishing the recorded move")
			return rep, finishJournal(ctx, src, j)
		}
		return rep, nothingToMove(opts.Scope, src)
	}
	log.Info("Moving Cluster API objects", "Clusters", len(rep.Clusters), "ClusterClasses", len(rep.ClusterClasses), "objects", g.Count())

	if err := Preflight(ctx, src, dst, g); err != nil {
		return rep, err
	}

	if j == nil {
		// A fresh move never overwrites what the target already holds.
		clash, err := Conflicts(ctx, dst, g)
		if err != nil {
			return rep, fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
		}
		if len(clash) > 0 {
			names := make([]string, 0, 10)
			for i, r := range clash {
				if i == 10 {
					names = append(names, fmt.Sprintf("and %d more", len(clash)-10))
					break
				}
				names = append(names, r.String())
			}
			return rep, fmt.Errorf("cannot start the move: the target cluster %s already holds %d of the objects to move: %s; remove them from the target (or, if an earlier move was interrupted and its journal lost, move into a clean target)",
				dst.Config.Host, len(clash), strings.Join(names, ", "))
		}
	}
	m := &mover{src: src, dst: dst, opts: opts, g: g, uids: map[types.UID]types.UID{}}
	if j == nil {
		j = &journal{MoveID: "move-" + rand.String(8), Scope: opts.Scope, Target: dst.Config.Host, TargetID: dstID, Source: src.Config.Host, Started: opts.Now().UTC(), Phase: phaseCreating}
	}
	m.moveID = j.MoveID
	rep.MoveID = j.MoveID
	j.Objects = g.Count()
	if j.Phase != phaseDeleting {
		j.Phase = phaseCreating
	}
	if err := writeJournal(ctx, src, journalNamespace(opts.Scope), j); err != nil {
		return rep, err
	}

	// Remember the original objects for the verification before pausing changes them.
	originals := make(map[types.UID]*unstructured.Unstructured, g.Count())
	for _, n := range g.Moved() {
		originals[n.Ref.UID] = n.Obj.DeepCopy()
	}

	if err := m.pauseSource(ctx); err != nil {
		return rep, m.abortBeforeDelete(ctx, j, fmt.Errorf("pausing the source: %w", err))
	}
	if err := WaitBlockMove(ctx, src, g, opts); err != nil {
		return rep, m.abortBeforeDelete(ctx, j, err)
	}
	if err := m.createAll(ctx); err != nil {
		return rep, m.abortBeforeDelete(ctx, j, err)
	}
	rep.Created, rep.Updated = int(m.created.Load()), int(m.updated.Load())

	j.Phase = phaseDeleting
	if err := writeJournal(ctx, src, journalNamespace(opts.Scope), j); err != nil {
		return rep, fmt.Errorf("every object exists in the target, but recording that in the journal failed (%w); re-run the same move to finish it", err)
	}
	deleted, err := m.deleteSource(ctx)
	rep.Deleted = deleted
	if err != nil {
		return rep, fmt.Errorf("every object exists in the target (still paused) but deleting from the source failed after %d objects: %w; re-run the same command (or add --resume) to finish the move", deleted, err)
	}
	if err := m.unpause(ctx, dst, g.Moved(), "target"); err != nil {
		return rep, fmt.Errorf("the move is complete but unpausing in the target failed: %w; re-run the same command (or add --resume) to finish", err)
	}
	var kept []*Node
	for _, n := range g.Moved() {
		if n.KeepInSource && !n.Global {
			kept = append(kept, n)
		}
	}
	if err := m.unpause(ctx, src, kept, "source"); err != nil {
		return rep, fmt.Errorf("the move is complete but unpausing the objects kept in the source failed: %w", err)
	}
	if err := finishJournal(ctx, src, j); err != nil {
		return rep, err
	}
	log.Info("Verifying the target against the source")
	diffs, err := Verify(ctx, dst, g, originals)
	if err != nil {
		return rep, fmt.Errorf("the move is complete, but verifying it failed: %w", err)
	}
	rep.Differences = diffs
	if len(diffs) > 0 {
		return rep, fmt.Errorf("%w: %d difference(s)", ErrVerification, len(diffs))
	}
	return rep, nil
}

func fillReport(rep *Report, g *Graph) {
	rep.Objects = g.Count()
	for _, n := range g.Moved() {
		switch {
		case n.Ref.Kind == "Cluster" && strings.HasPrefix(n.Ref.APIVersion, "cluster.x-k8s.io/"):
			rep.Clusters = append(rep.Clusters, n.Ref.Namespace+"/"+n.Ref.Name)
		case n.Ref.Kind == "ClusterClass":
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
	rep.Warnings = g.Warnings
}

// abortBeforeDelete unpauses the source after a failure before anything was deleted, and says so.
func (m *mover) abortBeforeDelete(ctx context.Context, j *journal, cause error) error {
	if j.Phase == phaseDeleting {
		return fmt.Errorf("%w; the source was already partly deleted by an earlier run: re-run the same command to finish", cause)
	}
	// Use a fresh context: the caller's may be the reason we stop.
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	created := m.created.Load() + m.updated.Load()
	if err := m.unpause(uctx, m.src, m.paused, "source"); err != nil {
		return fmt.Errorf("%w; unpausing the source ALSO failed (%v): the source is intact but Clusters paused by capctl (annotation %s) stay paused until you re-run the move or unpause them", cause, err, MovePausedAnnotation)
	}
	return fmt.Errorf("%w\nNothing was deleted: the source is intact and unpaused. %d of %d objects were written to the target %s, where they stay paused; re-run the same command (or add --resume) to complete the move",
		cause, created, m.g.Count(), m.dst.Config.Host)
}

// Preflight checks the target can take the graph: the same providers at the same or newer
// versions, every moved kind served, every cluster provisioned.
func Preflight(ctx context.Context, src, dst *cluster.Client, g *Graph) error {
	var problems []string
	dstProviders, err := inventory.List(ctx, dst)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return fmt.Errorf("target cluster %s: %w", dst.Config.Host, err)
	}
	problems = append(problems, compareProviders(g.Providers, dstProviders)...)
	seen := map[string]bool{}
	for _, n := range g.Moved() {
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
	for _, s := range src {
		found := false
		for _, d := range dst {
			if d.ProviderName != s.ProviderName || d.Type != s.Type {
				continue
			}
			found = true
			sv, err1 := semver.NewVersion(s.Version)
			dv, err2 := semver.NewVersion(d.Version)
			if err1 == nil && err2 == nil && dv.LessThan(sv) {
				out = append(out, fmt.Sprintf("provider %s in the target cluster is older than in the source cluster (source: %s, target: %s): upgrade it first", s.ManifestLabel(), s.Version, d.Version))
			}
			break
		}
		if !found {
			out = append(out, fmt.Sprintf("provider %s (%s) not found in the target cluster: install it there (capctl init)", s.ManifestLabel(), s.Version))
		}
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

// pauseSource pauses moved Clusters (spec.paused) and ClusterClasses (annotation), marking the
// pause as capctl's; objects the user paused are left alone and remembered.
func (m *mover) pauseSource(ctx context.Context) error {
	var todo []*Node
	for _, n := range m.g.Moved() {
		if !(isClusterNode(n) || isClusterClassNode(n)) || n.UserPaused {
			continue
		}
		m.paused = append(m.paused, n)
		if _, ours := n.Obj.GetAnnotations()[MovePausedAnnotation]; ours {
			continue // paused by an earlier run of this move
		}
		todo = append(todo, n)
	}
	return m.parallel(ctx, todo, func(ctx context.Context, n *Node) error {
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{MovePausedAnnotation: m.moveID}}}
		if isClusterNode(n) {
			patch["spec"] = map[string]any{"paused": true}
		} else {
			patch["metadata"].(map[string]any)["annotations"].(map[string]any)[PausedAnnotation] = ""
		}
		obj := n.Obj.DeepCopy()
		if err := mergePatch(ctx, m.src, obj, patch); err != nil {
			return fmt.Errorf("pausing %s: %w", n.Ref, err)
		}
		n.Obj = obj
		return nil
	})
}

// unpause lifts capctl's pause from the given nodes in cluster c.
func (m *mover) unpause(ctx context.Context, c *cluster.Client, nodes []*Node, where string) error {
	var todo []*Node
	for _, n := range nodes {
		if (isClusterNode(n) || isClusterClassNode(n)) && !n.UserPaused {
			todo = append(todo, n)
		}
	}
	return m.parallel(ctx, todo, func(ctx context.Context, n *Node) error {
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{MovePausedAnnotation: nil}}}
		if isClusterNode(n) {
			patch["spec"] = map[string]any{"paused": nil}
		} else {
			patch["metadata"].(map[string]any)["annotations"].(map[string]any)[PausedAnnotation] = nil
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(n.Obj.GroupVersionKind())
		obj.SetNamespace(n.Ref.Namespace)
		obj.SetName(n.Ref.Name)
		if err := mergePatch(ctx, c, obj, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("unpausing %s in the %s: %w", n.Ref, where, err)
		}
		return nil
	})
}

func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b))
}

// parallel runs fn over nodes with bounded concurrency and joins the errors.
func (m *mover) parallel(ctx context.Context, nodes []*Node, fn func(context.Context, *Node) error) error {
	if len(nodes) == 0 {
		return nil
	}
	work := make(chan *Node)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	workers := min(m.opts.Parallelism, len(nodes))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				if err := fn(ctx, n); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, n := range nodes {
		if ctx.Err() != nil {
			break
		}
		work <- n
	}
	close(work)
	wg.Wait()
	if len(errs) > 5 {
		more := len(errs) - 5
		errs = append(errs[:5], fmt.Errorf("... and %d more errors", more))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// createAll creates every moved object in the target, level by level.
func (m *mover) createAll(ctx context.Context) error {
	if err := ensureNamespaces(ctx, m.dst, m.g.Moved()); err != nil {
		return err
	}
	total := m.g.Count()
	var done atomic.Int64
	m.opts.Log.Info("Creating objects in the target cluster", "objects", total, "levels", len(m.g.Order))
	for _, level := range m.g.Order {
		err := m.parallel(ctx, level, func(ctx context.Context, n *Node) error {
			if err := m.createOne(ctx, n); err != nil {
				return err
			}
			d := done.Add(1)
			if m.opts.Progress != nil {
				m.opts.Progress("create", int(d), total)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("creating objects in the target cluster %s: %w", m.dst.Config.Host, err)
		}
	}
	return nil
}

// cleanForCreate returns the object as it is created in the target: no status, no server-set
// metadata, owner references pointing at the owners' new UIDs.
func cleanForCreate(src *unstructured.Unstructured, uids func(types.UID) (types.UID, bool)) (*unstructured.Unstructured, error) {
	o := src.DeepCopy()
	delete(o.Object, "status")
	o.SetResourceVersion("")
	o.SetUID("")
	o.SetCreationTimestamp(metav1.Time{})
	o.SetDeletionTimestamp(nil)
	o.SetDeletionGracePeriodSeconds(nil)
	o.SetManagedFields(nil)
	o.SetGeneration(0)
	o.SetSelfLink("")
	if o.GetName() != "" {
		o.SetGenerateName("")
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		nu, ok := uids(refs[i].UID)
		if !ok {
			return nil, fmt.Errorf("owner %s %s of %s %s was not created in the target", refs[i].Kind, refs[i].Name, o.GetKind(), o.GetName())
		}
		refs[i].UID = nu
	}
	if len(refs) > 0 {
		o.SetOwnerReferences(refs)
	}
	return o, nil
}

func (m *mover) uid(old types.UID) (types.UID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.uids[old]
	return u, ok
}

func (m *mover) createOne(ctx context.Context, n *Node) error {
	o, err := cleanForCreate(n.Obj, m.uid)
	if err != nil {
		return err
	}
	adoptedAsIs := false
	err = m.dst.Create(ctx, o)
	switch {
	case err == nil:
		m.created.Add(1)
		if m.opts.AfterCreate != nil {
			m.opts.AfterCreate(int(m.created.Load()))
		}
	case apierrors.IsAlreadyExists(err):
		// An earlier run created it: adopt it, and bring it up to date unless it is a global
		// object or a shared copy (a ClusterClass kept in the source), which are never overwritten.
		existing := &unstructured.Unstructured{}
		existing.SetGroupVersionKind(o.GroupVersionKind())
		if err := m.dst.Get(ctx, client.ObjectKeyFromObject(o), existing); err != nil {
			return fmt.Errorf("reading %s in the target: %w", n.Ref, err)
		}
		if !n.Global && !n.KeepInSource {
			o.SetUID(existing.GetUID())
			o.SetResourceVersion(existing.GetResourceVersion())
			if err := m.dst.Update(ctx, o); err != nil {
				return fmt.Errorf("updating %s in the target: %w", n.Ref, err)
			}
			m.updated.Add(1)
		} else {
			o, adoptedAsIs = existing, true
		}
	default:
		return fmt.Errorf("creating %s: %w", n.Ref, err)
	}
	// Field ownership of server-side appliers (the topology controller, GitOps tools) is put
	// back, as clusterctl does, so capctl does not become the owner of their fields. Objects
	// that were never server-side applied cost no extra request.
	if mf := n.Obj.GetManagedFields(); hasApplyManager(mf) && !adoptedAsIs {
		patchObj := &unstructured.Unstructured{}
		patchObj.SetGroupVersionKind(o.GroupVersionKind())
		patchObj.SetNamespace(o.GetNamespace())
		patchObj.SetName(o.GetName())
		if err := mergePatch(ctx, m.dst, patchObj, map[string]any{"metadata": map[string]any{"managedFields": mf}}); err != nil {
			return fmt.Errorf("restoring the field owners of %s in the target: %w", n.Ref, err)
		}
	}
	m.mu.Lock()
	m.uids[n.Ref.UID] = o.GetUID()
	m.mu.Unlock()
	return nil
}

func hasApplyManager(mf []metav1.ManagedFieldsEntry) bool {
	for _, e := range mf {
		if e.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}

// ensureNamespaces creates the namespaces of the moved objects in c (one LIST, then creates).
func ensureNamespaces(ctx context.Context, c *cluster.Client, nodes []*Node) error {
	list := &corev1.NamespaceList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("listing namespaces of the target cluster %s: %w", c.Config.Host, err)
	}
	have := map[string]bool{}
	for _, ns := range list.Items {
		have[ns.Name] = true
	}
	for _, n := range nodes {
		ns := n.Ref.Namespace
		if ns == "" || have[ns] {
			continue
		}
		have[ns] = true
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s in the target cluster %s: %w", ns, c.Config.Host, err)
		}
	}
	return nil
}

// deleteSource deletes moved objects from the source, leaves first; each one is annotated
// delete-for-move and its finalizers removed, and the delete is guarded by its UID.
func (m *mover) deleteSource(ctx context.Context) (int, error) {
	var total int
	for _, n := range m.g.Moved() {
		if !n.Global && !n.KeepInSource {
			total++
		}
	}
	m.opts.Log.Info("Deleting objects from the source cluster", "objects", total)
	var done atomic.Int64
	for i := len(m.g.Order) - 1; i >= 0; i-- {
		var level []*Node
		for _, n := range m.g.Order[i] {
			if !n.Global && !n.KeepInSource {
				level = append(level, n)
			}
		}
		err := m.parallel(ctx, level, func(ctx context.Context, n *Node) error {
			obj := &unstructured.Unstructured{}
			obj.SetGroupVersionKind(n.Obj.GroupVersionKind())
			obj.SetNamespace(n.Ref.Namespace)
			obj.SetName(n.Ref.Name)
			patch := map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{DeleteForMoveAnnotation: ""},
				"finalizers":  nil,
				"uid":         string(n.Ref.UID), // merge patch fails if the object was replaced
			}}
			err := mergePatch(ctx, m.src, obj, patch)
			if err == nil {
				err = m.src.Delete(ctx, obj, client.Preconditions{UID: &n.Ref.UID})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting %s from the source: %w", n.Ref, err)
			}
			d := done.Add(1)
			if m.opts.Progress != nil {
				m.opts.Progress("delete", int(d), total)
			}
			return nil
		})
		if err != nil {
			return int(done.Load()), err
		}
	}
	return int(done.Load()), nil
}
