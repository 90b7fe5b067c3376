package move

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
)

// mover holds the state of one run.
type mover struct {
	src, dst *cluster.Client
	opts     Options
	g        *Graph // the objects as the source stores them (pause, delete)
	tg       *Graph // the same objects as the target stores them (create, verify, unpause)
	moveID   string

	mu      sync.Mutex
	uids    map[types.UID]types.UID // source UID -> target UID
	adopted map[types.UID]bool      // global objects and shared copies the target already held
	created atomic.Int64
	updated atomic.Int64
	present atomic.Int64

	unfinalized atomic.Int64 // source objects annotated delete-for-move and stripped of finalizers
}

// canPause tells whether capctl pauses (and later unpauses) the node: Clusters and
// ClusterClasses, unless their user paused them.
func canPause(n *Node) bool {
	return (isClusterNode(n) || isClusterClassNode(n)) && !n.UserPaused
}

func pausable(g *Graph) []Ref {
	var out []Ref
	for _, n := range g.Moved() {
		if canPause(n) {
			out = append(out, n.Ref)
		}
	}
	return out
}

// pauseSource pauses moved Clusters (spec.paused) and ClusterClasses (annotation), marking the
// pause as capctl's; objects the user paused are left alone. The graph's copies are not changed:
// they stay as they were before the move.
func (m *mover) pauseSource(ctx context.Context) error {
	var todo []*Node
	for _, n := range m.g.Moved() {
		if canPause(n) && !n.pausedByUs {
			todo = append(todo, n)
		}
	}
	var done atomic.Int64
	return m.parallel(ctx, todo, func(ctx context.Context, n *Node) error {
		patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{MovePausedAnnotation: m.moveID}}}
		if isClusterNode(n) {
			patch["spec"] = map[string]any{"paused": true}
		} else {
			patch["metadata"].(map[string]any)["annotations"].(map[string]any)[PausedAnnotation] = ""
		}
		if err := mergePatch(ctx, m.src, bare(n), patch); err != nil {
			return fmt.Errorf("pausing %s: %w", n.Ref, err)
		}
		m.opts.hook("pause", int(done.Add(1)))
		return nil
	})
}

// bare is an object with only the identity of n, for patches and deletes.
func bare(n *Node) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(n.Obj.GroupVersionKind())
	obj.SetNamespace(n.Ref.Namespace)
	obj.SetName(n.Ref.Name)
	return obj
}

// unpausePatch lifts capctl's pause, putting spec.paused back as it was before the move.
func unpausePatch(n *Node) map[string]any {
	patch := map[string]any{"metadata": map[string]any{"annotations": map[string]any{MovePausedAnnotation: nil}}}
	if isClusterNode(n) {
		var was any
		if v, ok, _ := unstructured.NestedFieldNoCopy(n.Obj.Object, "spec", "paused"); ok {
			was = v
		}
		patch["spec"] = map[string]any{"paused": was}
	} else {
		patch["metadata"].(map[string]any)["annotations"].(map[string]any)[PausedAnnotation] = nil
	}
	return patch
}

// unpause lifts capctl's pause from the given nodes in cluster c.
func (m *mover) unpause(ctx context.Context, c *cluster.Client, nodes []*Node, where string) error {
	var todo []*Node
	for _, n := range nodes {
		if canPause(n) {
			todo = append(todo, n)
		}
	}
	return m.parallel(ctx, todo, func(ctx context.Context, n *Node) error {
		if err := mergePatch(ctx, c, bare(n), unpausePatch(n)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("unpausing %s in the %s: %w", n.Ref, where, err)
		}
		return nil
	})
}

// unpauseTarget lifts the pause in the target and checks each answer against the pre-move copy.
func (m *mover) unpauseTarget(ctx context.Context) error {
	var todo []*Node
	for _, n := range m.tg.Moved() {
		if canPause(n) && !m.isAdopted(n) {
			todo = append(todo, n)
		}
	}
	var done atomic.Int64
	var mu sync.Mutex
	var diffs []Difference
	err := m.parallel(ctx, todo, func(ctx context.Context, n *Node) error {
		obj := bare(n)
		if err := mergePatch(ctx, m.dst, obj, unpausePatch(n)); err != nil {
			return fmt.Errorf("unpausing %s in the target: %w", n.Ref, err)
		}
		want, err := m.desired(n, false)
		if err != nil {
			return err
		}
		if p := diffObject(want, obj, n); len(p) > 0 {
			mu.Lock()
			for _, s := range p {
				diffs = append(diffs, Difference{Object: n.Ref, Problem: s})
			}
			mu.Unlock()
		}
		m.opts.hook("unpause", int(done.Add(1)))
		return nil
	})
	if err == nil && len(diffs) > 0 {
		err = fmt.Errorf("%w after unpausing: %v", ErrVerification, diffs)
	}
	return err
}

func mergePatch(ctx context.Context, c client.Client, obj client.Object, patch map[string]any) error {
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, mustJSON(patch)))
}

// parallel runs fn over nodes with bounded concurrency (errgroup.SetLimit) and joins the
// errors; it stops handing out work once ctx is done.
func (m *mover) parallel(ctx context.Context, nodes []*Node, fn func(context.Context, *Node) error) error {
	var eg errgroup.Group
	eg.SetLimit(m.opts.Parallelism)
	var mu sync.Mutex
	var errs []error
	for _, n := range nodes {
		if ctx.Err() != nil {
			break
		}
		eg.Go(func() error {
			if err := fn(ctx, n); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = eg.Wait()
	if len(errs) > 5 {
		more := len(errs) - 5
		errs = append(errs[:5], fmt.Errorf("... and %d more errors", more))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// desired is the object as the target must hold it: the pre-move copy without status and
// server-set metadata, owner references pointing at the owners' target UIDs, and (while the move
// runs, paused true) capctl's pause.
func (m *mover) desired(n *Node, paused bool) (*unstructured.Unstructured, error) {
	src := n.Obj
	if paused && canPause(n) {
		src = src.DeepCopy()
		ann := src.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[MovePausedAnnotation] = m.moveID
		if isClusterNode(n) {
			_ = unstructured.SetNestedField(src.Object, true, "spec", "paused")
		} else {
			ann[PausedAnnotation] = ""
		}
		src.SetAnnotations(ann)
	}
	return cleanForCreate(src, m.uid)
}

// converge makes the target hold every object of the graph, paused, level by level (owners
// first): created when absent, updated when different from the pre-move copy, left alone when
// equal. existing is what the target held before (one LIST per kind).
func (m *mover) converge(ctx context.Context, existing map[string]*unstructured.Unstructured) error {
	if err := ensureNamespaces(ctx, m.dst, m.tg.Moved()); err != nil {
		return err
	}
	total := m.tg.Count()
	var done atomic.Int64
	m.opts.Log.Info("Creating objects in the target cluster", "objects", total, "levels", len(m.tg.Order))
	for _, level := range m.tg.Order {
		err := m.parallel(ctx, level, func(ctx context.Context, n *Node) error {
			if err := m.place(ctx, n, existing[objKey(n)]); err != nil {
				return err
			}
			d := int(done.Add(1))
			if m.opts.Progress != nil {
				m.opts.Progress("create", d, total)
			}
			m.opts.hook("create", d)
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

func (m *mover) setUID(n *Node, u types.UID, adopted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.uids[n.Ref.UID] = u
	if adopted {
		if m.adopted == nil {
			m.adopted = map[types.UID]bool{}
		}
		m.adopted[n.Ref.UID] = true
	}
}

func (m *mover) isAdopted(n *Node) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.adopted[n.Ref.UID]
}

// place makes the target hold n (ex: the target's object of that kind and name, or nil).
func (m *mover) place(ctx context.Context, n *Node, ex *unstructured.Unstructured) error {
	want, err := m.desired(n, true)
	if err != nil {
		return err
	}
	if ex == nil {
		err = m.dst.Create(ctx, want)
		if err == nil {
			m.created.Add(1)
			m.opts.Log.V(5).Info("Created in the target", "object", n.Ref.String())
		} else if apierrors.IsAlreadyExists(err) { // created since the target was listed
			ex = &unstructured.Unstructured{}
			ex.SetGroupVersionKind(want.GroupVersionKind())
			if err := m.dst.Get(ctx, client.ObjectKeyFromObject(want), ex); err != nil {
				return fmt.Errorf("reading %s in the target: %w", n.Ref, err)
			}
		} else {
			return fmt.Errorf("creating %s: %w", n.Ref, err)
		}
	}
	if ex != nil {
		// Global objects and shared copies (a ClusterClass kept in the source) are adopted as the
		// target holds them, never overwritten.
		if n.Global || n.KeepInSource {
			m.present.Add(1)
			m.setUID(n, ex.GetUID(), true)
			return nil
		}
		if len(diffObject(want, ex, n)) == 0 {
			m.present.Add(1)
			m.setUID(n, ex.GetUID(), false)
			return nil
		}
		want.SetUID(ex.GetUID())
		want.SetResourceVersion(ex.GetResourceVersion())
		if err := m.dst.Update(ctx, want); err != nil {
			return fmt.Errorf("updating %s in the target to its pre-move copy: %w", n.Ref, err)
		}
		m.updated.Add(1)
		m.opts.Log.V(5).Info("Updated in the target to its pre-move copy", "object", n.Ref.String())
	}
	// Field ownership of server-side appliers (the topology controller, GitOps tools) is put
	// back, as clusterctl does, so capctl does not become the owner of their fields. Objects
	// that were never server-side applied cost no extra request.
	if mf := n.Obj.GetManagedFields(); hasApplyManager(mf) {
		if err := mergePatch(ctx, m.dst, bare(n), map[string]any{"metadata": map[string]any{"managedFields": mf}}); err != nil {
			return fmt.Errorf("restoring the field owners of %s in the target: %w", n.Ref, err)
		}
	}
	m.setUID(n, want.GetUID(), false)
	return nil
}

// verifyTarget lists the moved kinds in the target and compares every object with the pre-move
// copy (capctl's pause aside). The target's objects are compared page by page as they are
// listed and then dropped, so the verification never holds a second copy of the graph.
func (m *mover) verifyTarget(ctx context.Context) ([]Difference, error) {
	nodes := make(map[string]*Node, m.tg.Count())
	for _, n := range m.tg.Moved() {
		nodes[objKey(n)] = n
	}
	jobs := movedKindJobs(m.tg)
	// found[job]: the problems of each object the job listed (none: equal). A job's pages come
	// one after the other, so each job's map is written by one goroutine at a time.
	found := make([]map[string][]string, len(jobs))
	err := eachListed(ctx, m.dst, jobs, func(job int, items []unstructured.Unstructured, restart bool) {
		if found[job] == nil || restart {
			found[job] = map[string][]string{}
		}
		for i := range items {
			k := listedKey(&items[i])
			if n := nodes[k]; n != nil {
				found[job][k] = m.compare(n, &items[i])
			}
		}
	})
	if err != nil {
		return nil, err
	}
	var diffs []Difference
	for _, n := range m.tg.Moved() {
		k := objKey(n)
		var problems []string
		listed := false
		for _, f := range found {
			if p, ok := f[k]; ok {
				problems, listed = p, true
				break
			}
		}
		if !listed {
			diffs = append(diffs, Difference{Object: n.Ref, Problem: "missing in the target"})
			continue
		}
		for _, p := range problems {
			diffs = append(diffs, Difference{Object: n.Ref, Problem: p})
		}
	}
	return diffs, nil
}

// compare is how the target's object got differs from what it must hold for n (nothing for an
// object adopted as the target holds it).
func (m *mover) compare(n *Node, got *unstructured.Unstructured) []string {
	if m.isAdopted(n) {
		return nil
	}
	want, err := m.desired(n, true)
	if err != nil {
		return []string{err.Error()}
	}
	return diffObject(want, got, n)
}

// deleteSource deletes the moved objects from the source, leaves first, each guarded by its UID.
// Objects with finalizers are first annotated delete-for-move and stripped of their finalizers
// (so their controllers do not clean up what moved); others are deleted at once, guarded by the
// resource version of the copy, so one that changed since takes the annotated way too. A resumed
// run lists the source first and deletes only what is left.
func (m *mover) deleteSource(ctx context.Context, resumed bool) (deleted, gone int, err error) {
	var total int
	for _, n := range m.g.Moved() {
		if !n.Global && !n.KeepInSource {
			total++
		}
	}
	var left map[types.UID]*unstructured.Unstructured
	if resumed {
		byKey, err := listMovedKinds(ctx, m.src, m.g)
		if err != nil {
			return 0, 0, fmt.Errorf("listing what is left in the source: %w", err)
		}
		left = make(map[types.UID]*unstructured.Unstructured, len(byKey))
		for _, o := range byKey {
			left[o.GetUID()] = o
		}
	}
	m.opts.Log.Info("Deleting objects from the source cluster", "objects", total)
	var nDeleted, nGone, done atomic.Int64
	for i := len(m.g.Order) - 1; i >= 0; i-- {
		var level []*Node
		for _, n := range m.g.Order[i] {
			if !n.Global && !n.KeepInSource {
				level = append(level, n)
			}
		}
		err := m.parallel(ctx, level, func(ctx context.Context, n *Node) error {
			cur := n.Obj
			if resumed {
				cur = left[n.Ref.UID]
			}
			if cur == nil {
				nGone.Add(1)
			} else {
				existed, err := m.deleteOne(ctx, n, cur)
				if err != nil {
					return err
				}
				if existed {
					nDeleted.Add(1)
				} else {
					nGone.Add(1)
				}
			}
			d := int(done.Add(1))
			if m.opts.Progress != nil {
				m.opts.Progress("delete", d, total)
			}
			m.opts.hook("delete", d)
			return nil
		})
		if err != nil {
			return int(nDeleted.Load()), int(nGone.Load()), err
		}
	}
	return int(nDeleted.Load()), int(nGone.Load()), nil
}

// deleteOne deletes one source object (cur: its last known state); false when it was gone.
func (m *mover) deleteOne(ctx context.Context, n *Node, cur *unstructured.Unstructured) (bool, error) {
	uid := n.Ref.UID
	if len(cur.GetFinalizers()) == 0 {
		rv := cur.GetResourceVersion()
		err := m.src.Delete(ctx, bare(n), client.Preconditions{UID: &uid, ResourceVersion: &rv})
		switch {
		case err == nil:
			m.opts.Log.V(5).Info("Deleted from the source", "object", n.Ref.String())
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case !apierrors.IsConflict(err) && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			return false, fmt.Errorf("deleting %s from the source: %w", n.Ref, err)
		}
		// Changed since it was read, or refused without the annotation: the annotated way.
	}
	patch := map[string]any{"metadata": map[string]any{
		"annotations": map[string]any{DeleteForMoveAnnotation: ""},
		"finalizers":  nil,
		"uid":         string(uid), // the patch fails if the object was replaced
	}}
	// A source controller that is still running adds its finalizer back to an object that is not
	// being deleted (Cluster API's reconcilers do so before they look at the pause). Deleting
	// after that would leave the object behind for good, since the paused controller never
	// removes its finalizer. So the delete is guarded by the resource version the strip
	// returned: a finalizer added in between changes it, the delete is refused with a conflict,
	// and the object is stripped again. Once the delete is accepted no finalizer can be added.
	for attempt := 1; ; attempt++ {
		obj := bare(n)
		err := mergePatch(ctx, m.src, obj, patch)
		if err == nil {
			if attempt == 1 {
				m.opts.hook("unfinalized", int(m.unfinalized.Add(1))) // annotated and stripped, not yet deleted
			}
			rv := obj.GetResourceVersion()
			err = m.src.Delete(ctx, bare(n), client.Preconditions{UID: &uid, ResourceVersion: &rv})
		}
		switch {
		case err == nil:
			m.opts.Log.V(5).Info("Deleted from the source (finalizers removed, annotated delete-for-move)", "object", n.Ref.String())
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		case apierrors.IsConflict(err) && attempt < maxStripAttempts:
			m.opts.Log.V(1).Info("Changed in the source while being deleted (a controller still running?); stripping it again", "object", n.Ref.String(), "attempt", attempt)
			continue
		default:
			return false, fmt.Errorf("deleting %s from the source: %w", n.Ref, err)
		}
	}
}

// maxStripAttempts bounds how often one source object is stripped again because something kept
// changing it between the strip and the delete.
const maxStripAttempts = 10

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
