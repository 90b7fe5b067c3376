package install

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
)

// FieldManager is the server-side apply field manager capctl writes with.
const FieldManager = "capctl"

// Defaults of ApplyOptions.
const (
	DefaultCRDTimeout   = time.Minute
	DefaultRetryTimeout = 10 * time.Second
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
	// CRDTimeout bounds the wait for CRDs to be Established (default 1 min).
	CRDTimeout time.Duration
	// RetryTimeout bounds the retries of one object on transient errors (default 10 s).
	RetryTimeout time.Duration
	// Concurrency bounds how many objects of one level are applied at once (default 8; 1 applies
	// one at a time in the given order).
	Concurrency int
	// Log receives a line per step (V(0)) and per object (V(1)). Nil discards.
	Log *logging.Logger
	// OnApplied is called after each object was applied (progress bars, tests). Calls never
	// overlap; done counts up by one per call.
	OnApplied func(ref ObjectRef, done, total int)
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

// definedKinds returns the group/version/kinds the CRDs in objs serve.
func definedKinds(objs []unstructured.Unstructured) (map[schema.GroupVersionKind]bool, error) {
	out := map[schema.GroupVersionKind]bool{}
	for i := range objs {
		if !isCRD(&objs[i]) {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[i].Object, crd); err != nil {
			return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", objs[i].GetName(), err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				out[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = true
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
	for i := range objs {
		u := &objs[i]
		gvk := u.GroupVersionKind()
		if gvk.Kind == "" {
			return fmt.Errorf("%s: object %d (%q) has no kind", source, i+1, u.GetName())
		}
		if u.GetName() == "" {
			return fmt.Errorf("%s: %s object %d has no metadata.name", source, gvk.Kind, i+1)
		}
		if defined[gvk] {
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
	if opts.RetryTimeout == 0 {
		opts.RetryTimeout = DefaultRetryTimeout
	}
	if err := CheckKinds(ctx, c, opts.Source, objs, opts.PendingCRDs...); err != nil {
		return nil, err
	}
	defined, _ := definedKinds(append(append([]unstructured.Unstructured{}, objs...), opts.PendingCRDs...))

	// Levels: Namespaces, CRDs, everything else, then webhook configurations. Objects of one
	// level are applied concurrently; a level starts when the one before is done. Webhook
	// configurations come last so that no object of the set is sent while a webhook the same set
	// registers (whose server is not running yet) could intercept it.
	var nss, crds, rest, hooks []*unstructured.Unstructured
	for i := range objs {
		u := objs[i].DeepCopy()
		switch {
		case u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "":
			nss = append(nss, u)
		case isCRD(u):
			crds = append(crds, u)
		case isWebhookConfiguration(u):
			hooks = append(hooks, u)
		default:
			rest = append(rest, u)
		}
	}
	ordered := append(append(append(append([]*unstructured.Unstructured{}, nss...), crds...), rest...), hooks...)
	refs := make([]ObjectRef, len(ordered))
	for i, u := range ordered {
		refs[i] = RefOf(u)
	}
	res := &Result{CRDs: len(crds)}
	// applied[i] says refs[i] is in the cluster; Result.Applied and ApplyError list them in the
	// order of refs whatever order the concurrent requests finished in.
	applied := make([]bool, len(refs))
	unchecked := make([]bool, len(refs))
	collect := func() {
		res.Applied, res.Unchecked = nil, nil
		for i, r := range refs {
			if applied[i] {
				res.Applied = append(res.Applied, r)
			}
			if unchecked[i] {
				res.Unchecked = append(res.Unchecked, r)
			}
		}
	}
	fail := func(i int, err error, others int) (*Result, error) {
		collect()
		res.Duration = time.Since(start)
		ae := &ApplyError{Source: opts.Source, Applied: append([]ObjectRef(nil), res.Applied...), Err: err, Others: others}
		for k, r := range refs {
			if !applied[k] {
				ae.Pending = append(ae.Pending, r)
			}
		}
		if i >= 0 {
			ae.Object = refs[i]
		}
		return res, ae
	}

	applyOpts := []client.ApplyOption{client.FieldOwner(opts.FieldManager)}
	if !opts.NoForce {
		applyOpts = append(applyOpts, client.ForceOwnership)
	}
	if opts.DryRun {
		applyOpts = append(applyOpts, client.DryRunAll)
	}
	// Kinds the API server does not know before this run: in a dry run their CRDs are not really
	// installed, so their objects cannot be checked.
	// Likewise objects in namespaces that the set creates.
	crdInstalledNow := map[schema.GroupVersionKind]bool{}
	newNamespaces := map[string]bool{}
	if opts.DryRun {
		for gvk := range defined {
			if _, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				crdInstalledNow[gvk] = true
			}
		}
		for _, ns := range nss {
			err := c.Get(ctx, client.ObjectKey{Name: ns.GetName()}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				newNamespaces[ns.GetName()] = true
			}
		}
	}

	total := len(ordered)
	var mu sync.Mutex // guards applied, unchecked, done and serializes OnApplied
	done := 0
	markApplied := func(i int, isUnchecked bool) {
		mu.Lock()
		defer mu.Unlock()
		applied[i] = true
		unchecked[i] = isUnchecked
		done++
		if !isUnchecked {
			log.V(1).Info("Applied", "object", refs[i].String(), "dryRun", opts.DryRun)
			if opts.OnApplied != nil {
				opts.OnApplied(refs[i], done, total)
			}
		}
	}
	applyOne := func(i int, u *unstructured.Unstructured) error {
		gvk := u.GroupVersionKind()
		if opts.DryRun && (crdInstalledNow[gvk] || newNamespaces[u.GetNamespace()]) {
			markApplied(i, true)
			return nil
		}
		err := retry(ctx, opts.RetryTimeout, func() error {
			obj := u.DeepCopy()
			err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), applyOpts...)
			// Discovery may lag a CRD that was just Established: retry no-matches of those kinds.
			if err != nil && meta.IsNoMatchError(err) && defined[gvk] {
				return retryable{err}
			}
			return err
		})
		if err != nil {
			return err
		}
		markApplied(i, false)
		return nil
	}
	limit := opts.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	// applyLevel applies ordered[from:to] with at most limit requests at once. After the first
	// failure it starts nothing new but lets the requests already sent finish, so that what it
	// reports as applied is what the cluster holds. It returns the failure of the lowest index
	// and how many others failed.
	applyLevel := func(from, to int) (failedAt, others int, err error) {
		errs := make([]error, to-from)
		var g errgroup.Group
		g.SetLimit(limit)
		var mu sync.Mutex
		stopped := false
		isStopped := func() bool { mu.Lock(); defer mu.Unlock(); return stopped }
		for i := from; i < to && !isStopped(); i++ {
			g.Go(func() error {
				if isStopped() { // a failure happened while this one waited for a slot
					return nil
				}
				if err := applyOne(i, ordered[i]); err != nil {
					mu.Lock()
					errs[i-from], stopped = err, true
					mu.Unlock()
				}
				return nil
			})
		}
		_ = g.Wait() // the goroutines report through errs
		failedAt = -1
		for k, e := range errs {
			switch {
			case e == nil:
			case failedAt < 0:
				failedAt, err = from+k, e
			default:
				others++
			}
		}
		return failedAt, others, err
	}

	if i, others, err := applyLevel(0, len(nss)); err != nil {
		return fail(i, err, others)
	}
	if i, others, err := applyLevel(len(nss), len(nss)+len(crds)); err != nil {
		return fail(i, err, others)
	}
	if len(crds) > 0 && !opts.DryRun {
		log.V(1).Info("Waiting for CRDs to be established", "count", len(crds))
		if err := WaitEstablished(ctx, c, names(crds), opts.CRDTimeout); err != nil {
			return fail(-1, err, 0)
		}
	}
	if i, others, err := applyLevel(len(nss)+len(crds), total-len(hooks)); err != nil {
		return fail(i, err, others)
	}
	if i, others, err := applyLevel(total-len(hooks), total); err != nil {
		return fail(i, err, others)
	}
	collect()
	res.Duration = time.Since(start)
	return res, nil
}

func names(us []*unstructured.Unstructured) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.GetName()
	}
	return out
}

// WaitEstablished waits until every named CRD has condition Established=True.
func WaitEstablished(ctx context.Context, c client.Client, crdNames []string, timeout time.Duration) error {
	pending := map[string]string{}
	for _, n := range crdNames {
		pending[n] = "not read yet"
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for n := range pending {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, crd); err != nil {
				pending[n] = err.Error()
				continue
			}
			pending[n] = "not established"
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					delete(pending, n)
				} else if cond.Type == apiextensionsv1.NamesAccepted && cond.Status == apiextensionsv1.ConditionFalse {
					pending[n] = "names not accepted: " + cond.Message
				}
			}
		}
		return len(pending) == 0, nil
	})
	if err != nil {
		keys := make([]string, 0, len(pending))
		for n, why := range pending {
			keys = append(keys, n+" ("+why+")")
		}
		sort.Strings(keys)
		return fmt.Errorf("CustomResourceDefinitions not established within %s: %s", timeout, strings.Join(keys, ", "))
	}
	return nil
}

// retryable marks an error that retry should try again.
type retryable struct{ error }

func (r retryable) Unwrap() error { return r.error }

// retry runs fn until it succeeds, fails permanently, or timeout passes. Transient errors are
// retried with a short backoff: throttling, server timeouts, unavailable, and network errors
// (refused or reset connections, client-side timeouts: a large CRD on a busy API server can take
// longer than one request's timeout, so a timed-out request is retried at least twice whatever
// the budget). Conflicts are not: server-side apply sends no resourceVersion, so a 409 is a
// field-manager conflict that waiting does not resolve.
func retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	delay := 200 * time.Millisecond
	timeouts := 0
	for {
		err := fn()
		if err == nil {
			return nil
		}
		var r retryable
		isRetryable := errors.As(err, &r)
		if r.error != nil {
			err = r.error
		}
		var ne net.Error
		timedOut := errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil
		if timedOut {
			timeouts++
		}
		transient := isRetryable || timedOut || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) ||
			apierrors.IsInternalError(err) || utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
		outOfTime := time.Now().Add(delay).After(deadline) && !(timedOut && timeouts <= 2)
		if !transient || outOfTime {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		if delay < 2*time.Second {
			delay = delay * 3 / 2
		}
	}
}
