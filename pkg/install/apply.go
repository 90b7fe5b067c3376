package install

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
)

// FieldManager is the server-side apply field manager capctl writes with.
const FieldManager = "capctl"

// Defaults of ApplyOptions.
const (
	// An API server on a busy machine (several management clusters initialising on 2 cores)
	// took over a minute to establish 35 CRDs; a CRD that never establishes is still named.
	DefaultCRDTimeout = 3 * time.Minute
	// DefaultConcurrency bounds the objects of one level (Namespaces, CRDs, the rest) applied at
	// once: enough to hide the API server's per-request latency (a large CRD takes ~100 ms to
	// store), few enough not to crowd a shared API server.
	DefaultConcurrency = 8
)

// ObjectRef names one object of a component set.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// RefOf returns the reference of an object.
func RefOf(u *unstructured.Unstructured) ObjectRef {
	return ObjectRef{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// Object is an empty object with the reference's kind and name: enough for Diagnose and Wait,
// which read the object themselves.
func (r ObjectRef) Object() unstructured.Unstructured {
	u := unstructured.Unstructured{}
	u.SetAPIVersion(r.APIVersion)
	u.SetKind(r.Kind)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	return u
}

// String is `Kind namespace/name` (or `Kind name` for cluster-scoped objects).
func (r ObjectRef) String() string {
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Source names where the objects come from, for errors and progress: a file name, or
	// "cluster-api v1.14.0 (core-components.yaml)".
	Source string
	// FieldManager defaults to "capctl".
	FieldManager string
	// NoForce leaves field conflicts with other managers as errors instead of taking the fields over.
	NoForce bool
	// DryRun sends every write as a server-side dry run; nothing is persisted.
	DryRun bool
	// CRDTimeout bounds the wait for CRDs to be Established (default 3 min).
	CRDTimeout time.Duration
	// RetryTimeout bounds the retries of one object on transient errors (cluster.IsTransient);
	// default cluster.DefaultBackoff's budget, 10 s.
	RetryTimeout time.Duration
	// Concurrency bounds how many objects of one level are applied at once (default 8; 1 applies
	// one at a time in the given order).
	Concurrency int
	// Log receives a line per step (V(0)) and per object (V(1)). Nil discards.
	Log *logging.Logger
	// OnApplied is called after each object was applied (progress bars, tests). Calls never
	// overlap; done counts up by one per call.
	OnApplied func(ref ObjectRef, done, total int)
	// WaitUsedCRDsOnly waits only for the CRDs whose kinds objects of the install (or Ready) use;
	// the API server establishes the others by itself. By default a set is complete only when all
	// its CRDs are Established. Init without --wait-providers sets it: clusterctl waits for none.
	WaitUsedCRDsOnly bool
	// PendingCRDs are CRDs an earlier step of the same run installs (or, in a dry run, would have
	// installed): their kinds count as known, and in a dry run objects of those kinds are reported
	// as unchecked rather than refused.
	PendingCRDs []unstructured.Unstructured
}

// Result says what Apply did.
type Result struct {
	Applied []ObjectRef `json:"applied"`
	// Unchecked are objects a dry run could not send to the server because their kind comes from a
	// CRD of the same set, or their namespace is created by the set, and that is not there yet.
	Unchecked []ObjectRef `json:"unchecked,omitempty"`
	// CRDs is how many CustomResourceDefinitions were applied (and waited for).
	CRDs     int           `json:"crds"`
	Duration time.Duration `json:"duration"`
}

// ApplyError is a failure part-way through Apply. Applied lists what is already in the cluster;
// running Apply again with the same objects completes the set.
type ApplyError struct {
	Source  string
	Object  ObjectRef // the object that failed (zero when the failure was waiting for CRDs)
	Applied []ObjectRef
	Pending []ObjectRef // not applied, Object included
	Err     error
	// Others counts further objects of the same level that failed too (they ran concurrently
	// with Object); they are in Pending.
	Others int
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	what := "applying " + e.Object.String()
	if e.Object.Kind == "" {
		what = "installing"
	}
	if e.Source != "" {
		what += " (" + e.Source + ")"
	}
	fmt.Fprintf(&b, "%s failed: %v", what, e.Err)
	if e.Others > 0 {
		fmt.Fprintf(&b, " (and %d more objects failed)", e.Others)
	}
	total := len(e.Applied) + len(e.Pending)
	if len(e.Applied) == 0 {
		fmt.Fprintf(&b, "; none of its %d objects was applied", total)
	} else {
		fmt.Fprintf(&b, "; %d of %d objects were applied before it (%s), %d were not (%s)",
			len(e.Applied), total, summarize(e.Applied), len(e.Pending), summarize(e.Pending))
	}
	return b.String()
}

func (e *ApplyError) Unwrap() error { return e.Err }

// summarize counts refs per kind: "1 Namespace, 13 CustomResourceDefinition, ...".
func summarize(refs []ObjectRef) string {
	counts := map[string]int{}
	var order []string
	for _, r := range refs {
		if counts[r.Kind] == 0 {
			order = append(order, r.Kind)
		}
		counts[r.Kind]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return strings.Join(parts, ", ")
}

// UnknownKindError is an object whose kind neither the API server nor a CRD of the set defines.
type UnknownKindError struct {
	Source string
	Object ObjectRef
	Err    error
}

func (e *UnknownKindError) Error() string {
	src := ""
	if e.Source != "" {
		src = " in " + e.Source
	}
	return fmt.Sprintf("%s%s has kind %q (apiVersion %s), which the API server does not serve and no CustomResourceDefinition in the same components defines; nothing was applied. Fix the components file, or install the CRD that defines %s first",
		e.Object, src, e.Object.Kind, e.Object.APIVersion, e.Object.Kind)
}

func (e *UnknownKindError) Unwrap() error { return e.Err }

var crdGK = schema.GroupKind{Group: apiextensionsv1.GroupName, Kind: "CustomResourceDefinition"}

func isCRD(u *unstructured.Unstructured) bool {
	return u.GroupVersionKind().GroupKind() == crdGK
}

func isWebhookConfiguration(u *unstructured.Unstructured) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == "admissionregistration.k8s.io" && (gvk.Kind == "ValidatingWebhookConfiguration" || gvk.Kind == "MutatingWebhookConfiguration")
}

// definedKinds returns the group/version/kinds the CRDs in objs serve, each with the name of its
// CRD. It reads the few fields
// it needs in place: converting whole CRDs (some are a megabyte of schema) costs more than the
// requests that apply them.
func definedKinds(objs []unstructured.Unstructured) (map[schema.GroupVersionKind]string, error) {
	out := map[schema.GroupVersionKind]string{}
	for i := range objs {
		u := &objs[i]
		if !isCRD(u) {
			continue
		}
		group, _, err1 := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, err2 := unstructured.NestedString(u.Object, "spec", "names", "kind")
		versions, _, err3 := unstructured.NestedFieldNoCopy(u.Object, "spec", "versions")
		list, ok := versions.([]any)
		if err := errors.Join(err1, err2, err3); err != nil || (versions != nil && !ok) {
			if err == nil {
				err = fmt.Errorf("spec.versions is a %T, not a list", versions)
			}
			return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", u.GetName(), err)
		}
		for _, v := range list {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if served, _ := m["served"].(bool); served && name != "" {
				out[schema.GroupVersionKind{Group: group, Version: name, Kind: kind}] = u.GetName()
			}
		}
	}
	return out, nil
}

// CheckKinds verifies, without writing, that every object's kind is served by the API server or
// defined by a CRD among objs. It is the first step of Apply; callers that apply several sets may
// check them all up front.
func CheckKinds(ctx context.Context, c *cluster.Client, source string, objs []unstructured.Unstructured, pendingCRDs ...unstructured.Unstructured) error {
	defined, err := definedKinds(append(append([]unstructured.Unstructured{}, objs...), pendingCRDs...))
	if err != nil {
		return fmt.Errorf("%s: %w", source, err)
	}
	return checkKinds(c, source, objs, defined)
}

// checkKinds is CheckKinds with the CRD-defined kinds already read.
func checkKinds(c *cluster.Client, source string, objs []unstructured.Unstructured, defined map[schema.GroupVersionKind]string) error {
	for i := range objs {
		u := &objs[i]
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" {
			return fmt.Errorf("%s: object %d (%q) has no kind", source, i+1, u.GetName())
		}
		if u.GetName() == "" {
			return fmt.Errorf("%s: %s object %d has no metadata.name", source, gvk.Kind, i+1)
		}
		if _, ok := defined[gvk]; ok {
			continue
		}
		if _, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			if meta.IsNoMatchError(err) {
				return &UnknownKindError{Source: source, Object: RefOf(u), Err: err}
			}
			return fmt.Errorf("%s: looking up kind %s: %w", source, gvk, err)
		}
	}
	return nil
}

// Apply applies objs (one component set) as described in the package documentation.
func Apply(ctx context.Context, c *cluster.Client, objs []unstructured.Unstructured, opts ApplyOptions) (*Result, error) {
	onApplied := opts.OnApplied
	so := SetsOptions{ApplyOptions: opts}
	if onApplied != nil {
		so.OnSetApplied = func(_ int, ref ObjectRef, done, total int) { onApplied(ref, done, total) }
	}
	res, err := ApplySets(ctx, c, []Set{{Source: opts.Source, Objects: objs}}, so)
	var r *Result
	if len(res) == 1 {
		r = res[0]
	}
	var se *SetsError
	if errors.As(err, &se) {
		return r, &ApplyError{Source: opts.Source, Object: se.Object, Applied: se.Sets[0].Applied, Pending: se.Sets[0].Pending, Err: se.Err, Others: se.Others}
	}
	return r, err
}

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
	start := time.Now()
	log := opts.Log
	if log == nil {
		log = logging.Discard()
	}
	if opts.FieldManager == "" {
		opts.FieldManager = FieldManager
	}
	if opts.CRDTimeout == 0 {
		opts.CRDTimeout = DefaultCRDTimeout
	}
	all := append([]unstructured.Unstructured{}, opts.PendingCRDs...)
	for _, s := range sets {
		all = append(all, s.Objects...)
	}
	defined, err := definedKinds(all)
	if err != nil {
		return nil, err
	}
	for _, s := range sets {
		if err := checkKinds(c, s.Source, s.Objects, defined); err != nil {
			return nil, err
		}
	}

	// Per set, its objects in install order: Namespaces, CRDs, objects of kinds the API server
	// serves already, objects of CRD-defined kinds, NeedsReady objects, webhook configurations.
	// Webhook configurations come last so that no object of the set is sent while a webhook the
	// same set registers (whose server is not running yet) could intercept it.
	n := len(sets)
	var nss, crds, served, ofNewKinds []item
	gated := make([][]item, n)
	hooks := make([][]item, n)
	refs := make([][]ObjectRef, n)
	results := make([]*Result, n)
	waitsReady := make([]bool, n)
	for k, s := range sets {
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
				hooks[k] = append(hooks[k], it)
			case opts.NeedsReady != nil && opts.NeedsReady(u):
				gated[k] = append(gated[k], it)
			default:
				if _, ok := defined[u.GroupVersionKind()]; ok {
					sNew = append(sNew, it)
				} else {
					sServed = append(sServed, it)
				}
			}
		}
		pos := 0
		for _, part := range [][]item{sNss, sCRDs, sServed, sNew, gated[k], hooks[k]} {
			for i := range part {
				part[i].pos = pos
				refs[k] = append(refs[k], RefOf(part[i].u))
				pos++
			}
		}
		nss, crds = append(nss, sNss...), append(crds, sCRDs...)
		served, ofNewKinds = append(served, sServed...), append(ofNewKinds, sNew...)
		results[k] = &Result{CRDs: len(sCRDs)}
		waitsReady[k] = s.AfterReady || len(gated[k]) > 0
	}

	// applied[k][i] says refs[k][i] is in the cluster; results and errors list objects in the
	// order of refs whatever order the concurrent requests finished in.
	applied := make([][]bool, n)
	unchecked := make([][]bool, n)
	done := make([]int, n)
	setDone := make([]bool, n)
	for k := range sets {
		applied[k] = make([]bool, len(refs[k]))
		unchecked[k] = make([]bool, len(refs[k]))
	}
	collect := func() []SetProgress {
		progress := make([]SetProgress, n)
		for k := range sets {
			r := results[k]
			r.Applied, r.Unchecked = nil, nil
			progress[k] = SetProgress{Source: sets[k].Source, Done: setDone[k]}
			for i, ref := range refs[k] {
				if applied[k][i] {
					r.Applied = append(r.Applied, ref)
				} else {
					progress[k].Pending = append(progress[k].Pending, ref)
				}
				if unchecked[k][i] {
					r.Unchecked = append(r.Unchecked, ref)
				}
			}
			progress[k].Applied = append([]ObjectRef(nil), r.Applied...)
			r.Duration = time.Since(start)
		}
		return progress
	}
	fail := func(set int, it *item, err error, others int) ([]*Result, error) {
		se := &SetsError{Failed: set, Err: err, Others: others, Sets: collect()}
		if it != nil {
			se.Object = refs[it.set][it.pos]
		}
		return results, se
	}

	applyOpts := []client.ApplyOption{client.FieldOwner(opts.FieldManager)}
	if !opts.NoForce {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if opts.DryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	// In a dry run the CRDs of the sets are not really installed, so objects of kinds the API
	// server does not know yet cannot be checked; likewise objects in namespaces the sets create.
	crdInstalledNow := map[schema.GroupVersionKind]bool{}
	newNamespaces := map[string]bool{}
	if opts.DryRun {
		for gvk := range defined {
			if _, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				crdInstalledNow[gvk] = true
			}
		}
		for _, it := range nss {
			err := c.Get(ctx, client.ObjectKey{Name: it.u.GetName()}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				newNamespaces[it.u.GetName()] = true
			}
		}
	}

	var mu sync.Mutex // guards applied, unchecked, done and serializes OnSetApplied
	markApplied := func(it item, isUnchecked bool) {
		mu.Lock()
		defer mu.Unlock()
		applied[it.set][it.pos] = true
		unchecked[it.set][it.pos] = isUnchecked
		done[it.set]++
		if !isUnchecked {
			log.V(1).Info("Applied", "object", refs[it.set][it.pos].String(), "dryRun", opts.DryRun)
			if opts.OnSetApplied != nil {
				opts.OnSetApplied(it.set, refs[it.set][it.pos], done[it.set], len(refs[it.set]))
			}
		}
	}
	applyOne := func(it item) error {
		u := it.u
		gvk := u.GroupVersionKind()
		if opts.DryRun && (crdInstalledNow[gvk] || newNamespaces[u.GetNamespace()]) {
			markApplied(it, true)
			return nil
		}
		backoff := cluster.DefaultBackoff
		if opts.RetryTimeout > 0 {
			backoff.Budget = opts.RetryTimeout
		}
		// A 409 is not retried (cluster.IsTransient): server-side apply sends no resourceVersion,
		// so a 409 is a conflict with another field manager (NoForce), which waiting does not resolve.
		err := cluster.Retry(ctx, backoff, func() error {
			obj := u.DeepCopy() // the client writes the server's answer into it
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), applyOpts...)
			// Discovery may lag a CRD that was just Established: retry no-matches of those kinds.
			if _, ok := defined[gvk]; ok && err != nil && meta.IsNoMatchError(err) {
				return cluster.Again(err)
			}
			return err
		})
		if err != nil {
			return err
		}
		markApplied(it, false)
		return nil
	}
	limit := opts.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	// applyLevel applies items with at most limit requests at once. After the first failure it
	// starts nothing new but lets the requests already sent finish, so that what it reports as
	// applied is what the cluster holds. It returns the failure of the lowest index and how many
	// others failed.
	applyLevel := func(items []item) (failed *item, others int, err error) {
		errs := make([]error, len(items))
		var g errgroup.Group
		g.SetLimit(limit)
		var mu sync.Mutex
		stopped := false
		isStopped := func() bool { mu.Lock(); defer mu.Unlock(); return stopped }
		for i := 0; i < len(items) && !isStopped(); i++ {
			g.Go(func() error {
				if isStopped() { // a failure happened while this one waited for a slot
					return nil
				}
				if err := applyOne(items[i]); err != nil {
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

	if it, others, err := applyLevel(nss); err != nil {
		return fail(it.set, it, err, others)
	}
	// The CRDs are followed until they are Established (a watch by name sees the creation too)
	// while they and the objects whose kinds the API server already serves (RBAC, Deployments,
	// Services, ...) are applied; an object of a CRD-defined kind waits for its CRD only, and a set
	// is done only when its CRDs are Established: the wait is paid once, mostly hidden.
	var cw *cluster.CRDWatch
	if len(crds) > 0 && !opts.DryRun {
		names := make([]string, len(crds))
		for i, it := range crds {
			names[i] = it.u.GetName()
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cw = cluster.WatchCRDs(wctx, c, names, opts.CRDTimeout)
	}
	// crdsFor waits until the CRDs that define the kinds of items are Established.
	crdsFor := func(items []item) error {
		if cw == nil {
			return nil
		}
		var names []string
		for _, it := range items {
			if n, ok := defined[it.u.GroupVersionKind()]; ok {
				names = append(names, n)
			}
		}
		return cw.Wait(names...)
	}
	// crdsOf waits until the CRDs of the given sets are Established.
	crdsOf := func(ks ...int) error {
		if cw == nil {
			return nil
		}
		var names []string
		for _, it := range crds {
			if slices.Contains(ks, it.set) {
				names = append(names, it.u.GetName())
			}
		}
		return cw.Wait(names...)
	}
	if it, others, err := applyLevel(append(append([]item{}, crds...), served...)); err != nil {
		return fail(it.set, it, err, others)
	}
	log.V(1).Info("Waiting for CRDs to be established", "count", len(crds))
	if err := crdsFor(ofNewKinds); err != nil {
		return fail(-1, nil, err, 0)
	}
	if it, others, err := applyLevel(ofNewKinds); err != nil {
		return fail(it.set, it, err, others)
	}
	// complete completes set k: its CRDs Established (unless WaitUsedCRDsOnly), SetDone.
	complete := func(k int) ([]*Result, error) {
		if !opts.WaitUsedCRDsOnly {
			if err := crdsOf(k); err != nil {
				return fail(-1, nil, err, 0)
			}
		}
		if opts.SetDone != nil {
			if err := opts.SetDone(ctx, k); err != nil {
				return fail(k, nil, err, 0)
			}
		}
		setDone[k] = true
		return nil, nil
	}
	// The sets that do not wait for Ready complete first, in order (cert-manager: its webhook
	// configurations, which Ready's probe goes through).
	var later []int
	for k := range sets {
		if waitsReady[k] && opts.Ready != nil {
			later = append(later, k)
			continue
		}
		for _, level := range [][]item{gated[k], hooks[k]} {
			if err := crdsFor(level); err != nil {
				return fail(-1, nil, err, 0)
			}
			if it, others, err := applyLevel(level); err != nil {
				return fail(k, it, err, others)
			}
		}
		if r, err := complete(k); err != nil {
			return r, err
		}
	}
	// Then Ready, and the others: all their NeedsReady objects, all their webhook
	// configurations, and each one's SetDone in order.
	if len(later) > 0 {
		var lateGated, lateHooks []item
		for _, k := range later {
			lateGated, lateHooks = append(lateGated, gated[k]...), append(lateHooks, hooks[k]...)
		}
		// Ready (cert-manager's probe) creates objects of the kinds NeedsReady picks.
		if err := crdsFor(lateGated); err != nil {
			return fail(-1, nil, err, 0)
		}
		if err := opts.Ready(ctx); err != nil {
			return fail(-1, nil, err, 0)
		}
		for _, level := range [][]item{lateGated, lateHooks} {
			if it, others, err := applyLevel(level); err != nil {
				return fail(it.set, it, err, others)
			}
		}
		for _, k := range later {
			if r, err := complete(k); err != nil {
				return r, err
			}
		}
	}
	collect()
	return results, nil
}
