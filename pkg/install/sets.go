package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
)

// Set is one component set of ApplySets: a provider version, or cert-manager.
type Set struct {
	// Source names the set in errors and progress (as ApplyOptions.Source does).
	Source  string
	Objects []unstructured.Unstructured
	// AfterReady: the set's last step (its NeedsReady objects, its webhook configurations and
	// SetDone) waits for SetsOptions.Ready. A set with NeedsReady objects always waits.
	AfterReady bool
}

// SetsOptions tune ApplySets. The embedded ApplyOptions tune every set; their Source and
// OnApplied are not used (see Set.Source and OnSetApplied).
type SetsOptions struct {
	ApplyOptions
	// OnSetApplied is called after each object was applied; done counts up by one per call within
	// the set. Calls never overlap.
	OnSetApplied func(set int, ref ObjectRef, done, total int)
	// NeedsReady picks the objects that can only be applied once Ready returned: cert-manager's
	// Issuers and Certificates, which its webhook must admit.
	NeedsReady func(u *unstructured.Unstructured) bool
	// Ready is called once when some set waits for it (Set.AfterReady), after every set that does
	// not wait is complete. Nil: nothing to wait for.
	Ready func(ctx context.Context) error
	// SetDone is called, in set order, when every object of a set is applied (a provider's
	// inventory entry). An error stops the install.
	SetDone func(ctx context.Context, set int) error
}

// SetProgress is how far ApplySets got with one set.
type SetProgress struct {
	Source  string      `json:"source"`
	Applied []ObjectRef `json:"applied"`
	Pending []ObjectRef `json:"pending,omitempty"`
	// Done: every object was applied and SetDone returned nil.
	Done bool `json:"done"`
}

// SetsError is a failure part-way through ApplySets. Sets says, per set, what is in the cluster;
// running ApplySets again with the same sets completes them.
type SetsError struct {
	// Failed is the set whose object (or SetDone) failed; -1 when the failure concerns every set:
	// waiting for the CRDs to be Established, or Ready.
	Failed int
	Object ObjectRef // the object that failed (zero when a step failed)
	Err    error
	// Others counts further objects of the same level that failed too (they ran concurrently).
	Others int
	Sets   []SetProgress
}

func (e *SetsError) Error() string {
	var b strings.Builder
	if e.Failed >= 0 {
		s := e.Sets[e.Failed]
		if e.Object.Kind != "" {
			b.WriteString((&ApplyError{Source: s.Source, Object: e.Object, Applied: s.Applied, Pending: s.Pending, Err: e.Err, Others: e.Others}).Error())
		} else {
			fmt.Fprintf(&b, "completing %s failed: %v; its %d objects were applied", s.Source, e.Err, len(s.Applied))
		}
	} else {
		fmt.Fprintf(&b, "installing failed: %v", e.Err)
	}
	var others []string
	for k, s := range e.Sets {
		if k == e.Failed {
			continue
		}
		switch {
		case s.Done:
			others = append(others, s.Source+": complete")
		case len(s.Applied) == 0:
			others = append(others, s.Source+": nothing applied")
		default:
			others = append(others, fmt.Sprintf("%s: %d of %d objects applied (%s)", s.Source, len(s.Applied), len(s.Applied)+len(s.Pending), summarize(s.Applied)))
		}
	}
	if len(others) > 0 {
		label := "other sets"
		if e.Failed < 0 {
			label = "sets"
		}
		fmt.Fprintf(&b, "; %s: %s", label, strings.Join(others, "; "))
	}
	return b.String()
}

func (e *SetsError) Unwrap() error { return e.Err }

// item is one object of ApplySets: its set, its place in the set's order, the object.
type item struct {
	set, pos int
	u        *unstructured.Unstructured
}

// ApplySets applies several component sets as one install, level by level across all of them,
// so that each wait is paid once:
//
//  1. the Namespaces of every set;
//  2. every CRD, together with the objects whose kinds the API server serves already (RBAC,
//     Deployments, Services, ...), while ONE watch follows all the CRDs until Established;
//  3. the objects of CRD-defined kinds, each once its own CRD is Established;
//  4. the sets that do not wait for Ready, in order: their webhook configurations, then (once
//     their CRDs are Established) SetDone;
//  5. Ready; then the other sets' NeedsReady objects, their webhook configurations, and SetDone
//     for each in order once its CRDs are Established.
//
// Objects of one level are applied concurrently; a level starts when the one before is done.
// Kinds are checked first for every set (a kind may come from a CRD of any set): a refused
// ApplySets writes nothing. A failure returns a *SetsError.
func ApplySets(ctx context.Context, c *cluster.Client, sets []Set, opts SetsOptions) ([]*Result, error) {
	a, err := newSetsApply(c, sets, opts)
	if err != nil {
		return nil, err
	}
	return a.run(ctx)
}

// setsApply is one run of ApplySets: the sets sorted into levels, and what of them is applied.
type setsApply struct {
	c       *cluster.Client
	sets    []Set
	opts    SetsOptions
	log     *logging.Logger
	start   time.Time
	defined map[schema.GroupVersionKind]string // kinds the sets' CRDs define → CRD name
	// applyOpts are the options of every apply request; limit bounds the requests of a level.
	applyOpts []client.ApplyOption
	limit     int
	backoff   cluster.Backoff

	// The levels: across every set, and per set for the levels applied set by set.
	nss, crds, served, ofNewKinds []item
	gated, hooks                  [][]item
	// refs[k] are set k's objects in install order; results[k] what ApplySets returns for it;
	// waitsReady[k] says its last step waits for Ready.
	refs       [][]ObjectRef
	results    []*Result
	waitsReady []bool

	// In a dry run the CRDs of the sets are not really installed, so objects of kinds the API
	// server does not know yet cannot be checked; likewise objects in namespaces the sets create.
	crdInstalledNow map[schema.GroupVersionKind]bool
	newNamespaces   map[string]bool

	// cw follows the sets' CRDs until Established (nil in a dry run or without CRDs).
	cw *cluster.CRDWatch

	// applied[k][i] says refs[k][i] is in the cluster; results and errors list objects in the
	// order of refs whatever order the concurrent requests finished in.
	mu        sync.Mutex // guards applied, unchecked, done and serializes OnSetApplied
	applied   [][]bool
	unchecked [][]bool
	done      []int
	setDone   []bool
}

// newSetsApply fills in the defaults, checks every set's kinds and sorts the objects into levels.
func newSetsApply(c *cluster.Client, sets []Set, opts SetsOptions) (*setsApply, error) {
	a := &setsApply{c: c, sets: sets, opts: opts, log: opts.Log, start: time.Now(), limit: opts.Concurrency, backoff: cluster.DefaultBackoff}
	if a.log == nil {
		a.log = logging.Discard()
	}
	if a.opts.FieldManager == "" {
		a.opts.FieldManager = FieldManager
	}
	if a.opts.CRDTimeout == 0 {
		a.opts.CRDTimeout = DefaultCRDTimeout
	}
	if opts.RetryTimeout > 0 {
		a.backoff.Budget = opts.RetryTimeout
	}
	if a.limit <= 0 {
		a.limit = DefaultConcurrency
	}
	a.applyOpts = []client.ApplyOption{client.FieldOwner(a.opts.FieldManager)}
	if !opts.NoForce {
		a.applyOpts = append(a.applyOpts, client.ForceOwnership)
	}
	if opts.DryRun {
		a.applyOpts = append(a.applyOpts, client.DryRunAll)
	}
	all := append([]unstructured.Unstructured{}, opts.PendingCRDs...)
	for _, s := range sets {
		all = append(all, s.Objects...)
	}
	var err error
	if a.defined, err = definedKinds(all); err != nil {
		return nil, err
	}
	for _, s := range sets {
		if err := checkKinds(c, s.Source, s.Objects, a.defined); err != nil {
			return nil, err
		}
	}
	a.sortLevels()
	return a, nil
}

// sortLevels puts, per set, its objects in install order: Namespaces, CRDs, objects of kinds the
// API server serves already, objects of CRD-defined kinds, NeedsReady objects, webhook
// configurations. Webhook configurations come last so that no object of the set is sent while a
// webhook the same set registers (whose server is not running yet) could intercept it.
func (a *setsApply) sortLevels() {
	n := len(a.sets)
	a.gated, a.hooks = make([][]item, n), make([][]item, n)
	a.refs, a.results, a.waitsReady = make([][]ObjectRef, n), make([]*Result, n), make([]bool, n)
	a.applied, a.unchecked = make([][]bool, n), make([][]bool, n)
	a.done, a.setDone = make([]int, n), make([]bool, n)
	for k, s := range a.sets {
		var sNss, sCRDs, sServed, sNew []item
		for i := range s.Objects {
			u := &s.Objects[i]
			it := item{set: k, u: u}
			switch {
			case u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "":
				sNss = append(sNss, it)
			case isCRD(u):
				sCRDs = append(sCRDs, it)
			case isWebhookConfiguration(u):
				a.hooks[k] = append(a.hooks[k], it)
			case a.opts.NeedsReady != nil && a.opts.NeedsReady(u):
				a.gated[k] = append(a.gated[k], it)
			default:
				if _, ok := a.defined[u.GroupVersionKind()]; ok {
					sNew = append(sNew, it)
				} else {
					sServed = append(sServed, it)
				}
			}
		}
		pos := 0
		for _, part := range [][]item{sNss, sCRDs, sServed, sNew, a.gated[k], a.hooks[k]} {
			for i := range part {
				part[i].pos = pos
				a.refs[k] = append(a.refs[k], RefOf(part[i].u))
				pos++
			}
		}
		a.nss, a.crds = append(a.nss, sNss...), append(a.crds, sCRDs...)
		a.served, a.ofNewKinds = append(a.served, sServed...), append(a.ofNewKinds, sNew...)
		a.results[k] = &Result{CRDs: len(sCRDs)}
		a.waitsReady[k] = s.AfterReady || len(a.gated[k]) > 0
		a.applied[k] = make([]bool, len(a.refs[k]))
		a.unchecked[k] = make([]bool, len(a.refs[k]))
	}
}

// run applies the levels in order (see ApplySets).
func (a *setsApply) run(ctx context.Context) ([]*Result, error) {
	if a.opts.DryRun {
		a.findUncheckable(ctx)
	}
	if err := a.level(ctx, a.nss); err != nil {
		return a.results, err
	}
	// The CRDs are followed until they are Established (a watch by name sees the creation too)
	// while they and the objects whose kinds the API server already serves (RBAC, Deployments,
	// Services, ...) are applied; an object of a CRD-defined kind waits for its CRD only, and a set
	// is done only when its CRDs are Established: the wait is paid once, mostly hidden.
	if len(a.crds) > 0 && !a.opts.DryRun {
		names := make([]string, len(a.crds))
		for i, it := range a.crds {
			names[i] = it.u.GetName()
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		a.cw = cluster.WatchCRDs(wctx, a.c, names, a.opts.CRDTimeout)
	}
	if err := a.level(ctx, append(append([]item{}, a.crds...), a.served...)); err != nil {
		return a.results, err
	}
	a.log.V(1).Info("Waiting for CRDs to be established", "count", len(a.crds))
	if err := a.crdsFor(a.ofNewKinds); err != nil {
		return a.results, a.fail(-1, nil, err, 0)
	}
	if err := a.level(ctx, a.ofNewKinds); err != nil {
		return a.results, err
	}
	later, err := a.completeUnready(ctx)
	if err != nil {
		return a.results, err
	}
	if err := a.completeAfterReady(ctx, later); err != nil {
		return a.results, err
	}
	a.collect()
	return a.results, nil
}

// findUncheckable finds, for a dry run, the kinds whose CRDs are not installed yet and the
// namespaces that do not exist yet: objects of those a dry run cannot send.
func (a *setsApply) findUncheckable(ctx context.Context) {
	a.crdInstalledNow, a.newNamespaces = map[schema.GroupVersionKind]bool{}, map[string]bool{}
	for gvk := range a.defined {
		if _, err := a.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			a.crdInstalledNow[gvk] = true
		}
	}
	for _, it := range a.nss {
		err := a.c.Get(ctx, client.ObjectKey{Name: it.u.GetName()}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			a.newNamespaces[it.u.GetName()] = true
		}
	}
}

// completeUnready completes, in order, the sets that do not wait for Ready (cert-manager: its
// webhook configurations, which Ready's probe goes through), and returns the others.
func (a *setsApply) completeUnready(ctx context.Context) (later []int, err error) {
	for k := range a.sets {
		if a.waitsReady[k] && a.opts.Ready != nil {
			later = append(later, k)
			continue
		}
		for _, level := range [][]item{a.gated[k], a.hooks[k]} {
			if err := a.crdsFor(level); err != nil {
				return nil, a.fail(-1, nil, err, 0)
			}
			if err := a.level(ctx, level); err != nil {
				return nil, err
			}
		}
		if err := a.complete(ctx, k); err != nil {
			return nil, err
		}
	}
	return later, nil
}

// completeAfterReady waits for Ready, then applies the later sets' NeedsReady objects, all
// their webhook configurations, and completes each in order.
func (a *setsApply) completeAfterReady(ctx context.Context, later []int) error {
	if len(later) == 0 {
		return nil
	}
	var lateGated, lateHooks []item
	for _, k := range later {
		lateGated, lateHooks = append(lateGated, a.gated[k]...), append(lateHooks, a.hooks[k]...)
	}
	// Ready (cert-manager's probe) creates objects of the kinds NeedsReady picks.
	if err := a.crdsFor(lateGated); err != nil {
		return a.fail(-1, nil, err, 0)
	}
	if err := a.opts.Ready(ctx); err != nil {
		return a.fail(-1, nil, err, 0)
	}
	for _, level := range [][]item{lateGated, lateHooks} {
		if err := a.level(ctx, level); err != nil {
			return err
		}
	}
	for _, k := range later {
		if err := a.complete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// complete completes set k: its CRDs Established (unless WaitUsedCRDsOnly), SetDone.
func (a *setsApply) complete(ctx context.Context, k int) error {
	if !a.opts.WaitUsedCRDsOnly {
		if err := a.crdsOf(k); err != nil {
			return a.fail(-1, nil, err, 0)
		}
	}
	if a.opts.SetDone != nil {
		if err := a.opts.SetDone(ctx, k); err != nil {
			return a.fail(k, nil, err, 0)
		}
	}
	a.setDone[k] = true
	return nil
}

// crdsFor waits until the CRDs that define the kinds of items are Established.
func (a *setsApply) crdsFor(items []item) error {
	if a.cw == nil {
		return nil
	}
	var names []string
	for _, it := range items {
		if n, ok := a.defined[it.u.GroupVersionKind()]; ok {
			names = append(names, n)
		}
	}
	return a.cw.Wait(names...)
}

// crdsOf waits until the CRDs of the given sets are Established.
func (a *setsApply) crdsOf(ks ...int) error {
	if a.cw == nil {
		return nil
	}
	var names []string
	for _, it := range a.crds {
		if slices.Contains(ks, it.set) {
			names = append(names, it.u.GetName())
		}
	}
	return a.cw.Wait(names...)
}

// level applies items and turns a failure into a *SetsError.
func (a *setsApply) level(ctx context.Context, items []item) error {
	if it, others, err := a.applyLevel(ctx, items); err != nil {
		return a.fail(it.set, it, err, others)
	}
	return nil
}

// applyLevel applies items with at most limit requests at once. After the first failure it
// starts nothing new but lets the requests already sent finish, so that what it reports as
// applied is what the cluster holds. It returns the failure of the lowest index and how many
// others failed.
func (a *setsApply) applyLevel(ctx context.Context, items []item) (failed *item, others int, err error) {
	errs := make([]error, len(items))
	var g errgroup.Group
	g.SetLimit(a.limit)
	var mu sync.Mutex
	stopped := false
	isStopped := func() bool { mu.Lock(); defer mu.Unlock(); return stopped }
	for i := 0; i < len(items) && !isStopped(); i++ {
		g.Go(func() error {
			if isStopped() { // a failure happened while this one waited for a slot
				return nil
			}
			if err := a.applyOne(ctx, items[i]); err != nil {
				mu.Lock()
				errs[i], stopped = err, true
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs
	for k, e := range errs {
		switch {
		case e == nil:
		case failed == nil:
			failed, err = &items[k], e
		default:
			others++
		}
	}
	return failed, others, err
}

// applyOne applies one object, retrying transient errors (cluster.Retry).
func (a *setsApply) applyOne(ctx context.Context, it item) error {
	u := it.u
	gvk := u.GroupVersionKind()
	if a.opts.DryRun && (a.crdInstalledNow[gvk] || a.newNamespaces[u.GetNamespace()]) {
		a.markApplied(it, true)
		return nil
	}
	// A 409 is not retried (cluster.IsTransient): server-side apply sends no resourceVersion,
	// so a 409 is a conflict with another field manager (NoForce), which waiting does not resolve.
	err := cluster.Retry(ctx, a.backoff, func() error {
		obj := u.DeepCopy() // the client writes the server's answer into it
		err := a.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), a.applyOpts...)
		// Discovery may lag a CRD that was just Established: retry no-matches of those kinds.
		if _, ok := a.defined[gvk]; ok && err != nil && meta.IsNoMatchError(err) {
			return cluster.Again(err)
		}
		return err
	})
	if err != nil {
		return err
	}
	a.markApplied(it, false)
	return nil
}

func (a *setsApply) markApplied(it item, isUnchecked bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied[it.set][it.pos] = true
	a.unchecked[it.set][it.pos] = isUnchecked
	a.done[it.set]++
	if !isUnchecked {
		a.log.V(1).Info("Applied", "object", a.refs[it.set][it.pos].String(), "dryRun", a.opts.DryRun)
		if a.opts.OnSetApplied != nil {
			a.opts.OnSetApplied(it.set, a.refs[it.set][it.pos], a.done[it.set], len(a.refs[it.set]))
		}
	}
}

// collect fills in the results and says, per set, what is applied and what not.
func (a *setsApply) collect() []SetProgress {
	progress := make([]SetProgress, len(a.sets))
	for k := range a.sets {
		r := a.results[k]
		r.Applied, r.Unchecked = nil, nil
		progress[k] = SetProgress{Source: a.sets[k].Source, Done: a.setDone[k]}
		for i, ref := range a.refs[k] {
			if a.applied[k][i] {
				r.Applied = append(r.Applied, ref)
			} else {
				progress[k].Pending = append(progress[k].Pending, ref)
			}
			if a.unchecked[k][i] {
				r.Unchecked = append(r.Unchecked, ref)
			}
		}
		progress[k].Applied = append([]ObjectRef(nil), r.Applied...)
		r.Duration = time.Since(a.start)
	}
	return progress
}

// fail is the *SetsError of a failure of set (-1: of every set), at item it when one failed.
func (a *setsApply) fail(set int, it *item, err error, others int) error {
	se := &SetsError{Failed: set, Err: err, Others: others, Sets: a.collect()}
	if it != nil {
		se.Object = a.refs[it.set][it.pos]
	}
	return se
}
