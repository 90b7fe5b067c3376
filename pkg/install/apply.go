package install

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

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
