package topologyengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment/mdutil"
	"sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster/structuredmerge"
	"sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/exp/topology/desiredstate"
	"sigs.k8s.io/cluster-api/exp/topology/scope"
	"sigs.k8s.io/cluster-api/util/cache"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Engine computes what the topology controller would do to Clusters, given planned objects.
type Engine struct {
	view *view
	c    *readOnly
	gen  desiredstate.Generator
	// base is the engine over the live objects alone (nil when nothing is planned): what the
	// controller computes today, against which a settled cluster's desired state is compared
	// before anything is asked of the API server (see settledBaseline).
	base *Engine
}

// New builds an engine over live (a client of the management cluster built with Scheme) in
// which planned replace the live objects of the same kind, namespace and name. A planned
// ClusterClass is seen as the ClusterClass controller would leave it: reconciled, its inline
// variables in its status.
func New(ctx context.Context, live client.Client, planned []*unstructured.Unstructured) (*Engine, error) {
	enableTopologyGate()
	objs := make([]*unstructured.Unstructured, 0, len(planned))
	for _, u := range planned {
		if u.GroupVersionKind().GroupKind() == clusterv1.GroupVersion.WithKind("ClusterClass").GroupKind() {
			r, err := reconciledClass(u)
			if err != nil {
				return nil, err
			}
			u = r
		}
		objs = append(objs, u)
	}
	reader := newCachedReader(live, live.Scheme())
	e, err := newEngine(ctx, live, reader, objs)
	if err != nil {
		return nil, err
	}
	if len(objs) > 0 {
		if e.base, err = newEngine(ctx, live, reader, nil); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// newEngine is an engine whose view is planned over reader (the reads shared with its base).
func newEngine(ctx context.Context, live client.Client, reader *cachedReader, planned []*unstructured.Unstructured) (*Engine, error) {
	v := newView(reader, live.Scheme(), planned)
	ro := &readOnly{Client: live, view: v}
	gen, err := desiredstate.NewGenerator(ro, noWorkloadCache{}, nil,
		cache.New[cache.HookEntry](ctx, cache.HookCacheDefaultTTL),
		cache.New[desiredstate.GenerateUpgradePlanCacheEntry](ctx, cache.DefaultTTL))
	if err != nil {
		return nil, fmt.Errorf("starting the upstream topology generator: %w", err)
	}
	return &Engine{view: v, c: ro, gen: gen}, nil
}

func reconciledClass(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	class := &clusterv1.ClusterClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, class); err != nil {
		return nil, fmt.Errorf("ClusterClass %s: %w", u.GetName(), err)
	}
	class = withInlineVariables(class)
	class.Status.ObservedGeneration = class.Generation
	conditions.Set(class, metav1.Condition{Type: clusterv1.ClusterClassVariablesReadyCondition, Status: metav1.ConditionTrue, Reason: "Planned"})
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(class)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: obj}
	out.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("ClusterClass"))
	return out, nil
}

// noWorkloadCache is the ClusterCache handed to the generator: it asks for a workload cluster's
// client only for MachinePools that have nodes, which a plan reports as not computed instead.
type noWorkloadCache struct{ clustercache.ClusterCache }

func (noWorkloadCache) GetClient(context.Context, client.ObjectKey) (client.Client, error) {
	return nil, errNoWorkload
}

// noSSACache makes every dry run go to the API server (upstream caches "no change" answers
// across reconciles; a plan is one pass).
type noSSACache struct{}

func (noSSACache) Add(string)              {}
func (noSSACache) Has(string, string) bool { return false }

// Action is what the topology controller would do to one object.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	// Rotate is a template whose spec changes: the controller creates a copy under a new name,
	// points its owner at it and deletes the old one.
	Rotate Action = "rotate"
	Delete Action = "delete"
)

// Change is one object the controller would write.
type Change struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Action Action   `json:"action"`
	Fields []string `json:"fields,omitempty"`
	Diff   string   `json:"diff,omitempty"`
}

// Rollout says whether one part of the cluster replaces its machines.
type Rollout struct {
	Name     string `json:"name,omitempty"`
	Class    string `json:"class,omitempty"`
	RollsOut bool   `json:"rollsOut"`
	Reason   string `json:"reason,omitempty"`
}

// Outcome is what the controller would do to one Cluster.
type Outcome struct {
	ControlPlane       Rollout   `json:"controlPlane"`
	MachineDeployments []Rollout `json:"machineDeployments"`
	MachinePools       []Rollout `json:"machinePools"`
	Changes            []Change  `json:"changes"`
	// UpgradePlan is the control plane's version steps when the version changes;
	// WorkersUpgradePlan the MachineDeployments' and MachinePools' (upstream computes one plan
	// for both; each picks up a step once the control plane is there).
	UpgradePlan        []string `json:"upgradePlan,omitempty"`
	WorkersUpgradePlan []string `json:"workersUpgradePlan,omitempty"`
	// Partial names what was not computed, or is "".
	Partial string `json:"partial"`
}

// Changed reports whether the controller would write anything.
func (o *Outcome) Changed() bool { return len(o.Changes) > 0 }

// Normalize makes the lists empty rather than absent, so the JSON has the same fields for
// every cluster.
func (o *Outcome) Normalize() {
	if o.MachineDeployments == nil {
		o.MachineDeployments = []Rollout{}
	}
	if o.MachinePools == nil {
		o.MachinePools = []Rollout{}
	}
	if o.Changes == nil {
		o.Changes = []Change{}
	}
}

// Plan computes what the topology controller would do to the Cluster (as the view sees it:
// planned if planned, live otherwise). A change upstream admission refuses is a *RefusedError.
func (e *Engine) Plan(ctx context.Context, cl *clusterv1.Cluster) (*Outcome, error) {
	s, partial, err := e.generate(ctx, cl)
	if err != nil {
		return nil, err
	}
	if partial != "" {
		return &Outcome{Partial: partial}, nil
	}
	baseline, err := e.settledBaseline(ctx, cl)
	if err != nil {
		return nil, err
	}
	d := &differ{ctx: ctx, c: e.c, cluster: s.Current.Cluster, baseline: baseline}
	out := &Outcome{UpgradePlan: s.UpgradeTracker.ControlPlane.UpgradePlan, WorkersUpgradePlan: s.UpgradeTracker.MachineDeployments.UpgradePlan}
	if len(out.WorkersUpgradePlan) == 0 {
		out.WorkersUpgradePlan = s.UpgradeTracker.MachinePools.UpgradePlan
	}
	if err := d.compare(s, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Desired is the Cluster's desired state as upstream's generator computes it, in the order the
// controller creates objects (each object before the one that references it, the Cluster last).
// Nothing is written; tests and benchmarks apply it to stand in for the controller's first
// reconcile on API servers that run no controllers.
func (e *Engine) Desired(ctx context.Context, cl *clusterv1.Cluster) ([]client.Object, error) {
	s, partial, err := e.generate(ctx, cl)
	if err != nil {
		return nil, err
	}
	if partial != "" {
		return nil, errors.New(partial)
	}
	d := s.Desired
	var out []client.Object
	add := func(objs ...client.Object) {
		for _, o := range objs {
			if !isNil(o) {
				out = append(out, o)
			}
		}
	}
	add(d.InfrastructureCluster, d.ControlPlane.InfrastructureMachineTemplate, d.ControlPlane.Object)
	if d.ControlPlane.MachineHealthCheck != nil {
		add(d.ControlPlane.MachineHealthCheck)
	}
	for _, name := range sortedKeys(d.MachineDeployments) {
		md := d.MachineDeployments[name]
		add(md.InfrastructureMachineTemplate, md.BootstrapTemplate, md.Object)
		if md.MachineHealthCheck != nil {
			add(md.MachineHealthCheck)
		}
	}
	add(d.Cluster)
	return out, nil
}

// generate reads the Cluster's blueprint and current state and runs upstream's generator. A
// non-empty partial says why the desired state is not computed.
func (e *Engine) generate(ctx context.Context, cl *clusterv1.Cluster) (*scope.Scope, string, error) {
	cl = cl.DeepCopy()
	class := &clusterv1.ClusterClass{}
	if err := e.view.Get(ctx, cl.GetClassKey(), class); err != nil {
		return nil, "", fmt.Errorf("reading ClusterClass %s of Cluster %s: %w", cl.GetClassKey(), cl.Name, err)
	}
	if why := NotComputed(class); why != "" {
		return nil, why, nil
	}
	if errs := (&admission.Cluster{}).DefaultAndValidateVariables(ctx, cl, nil, class); len(errs) > 0 {
		return nil, "", &RefusedError{Object: "Cluster " + cl.Namespace + "/" + cl.Name, Err: errs.ToAggregate()}
	}
	s := scope.New(cl)
	bp, err := readBlueprint(ctx, e.view, cl, class)
	if err != nil {
		return nil, "", err
	}
	s.Blueprint = bp
	if err := readCurrent(ctx, e.view, s); err != nil {
		return nil, "", err
	}
	for _, mp := range s.Current.MachinePools {
		if len(mp.Object.Status.NodeRefs) > 0 {
			return nil, fmt.Sprintf("MachinePool %s has nodes: whether it is upgrading is read from the workload cluster, which topology plan does not read", mp.Object.Name), nil
		}
	}
	desired, err := e.gen.Generate(ctx, s)
	if err != nil {
		return nil, "", fmt.Errorf("computing the desired state of Cluster %s/%s: %w", cl.Namespace, cl.Name, err)
	}
	s.Desired = desired
	return s, "", nil
}

type differ struct {
	ctx     context.Context
	c       client.Client
	cluster *clusterv1.Cluster
	// baseline is the desired state of a settled cluster without the planned change, by object
	// (nil: every object is compared by dry run).
	baseline map[string]*unstructured.Unstructured
}

// settledBaseline is the desired state the live objects alone give the Cluster, by object, when
// the cluster is settled: the topology controller has reconciled its current generation with
// the current class (TopologyReconciled True), so what it has written is that desired state
// already, and an object the planned change leaves identical gets no write from it. Nil when
// nothing is planned, or the cluster is not settled (then every object is compared by dry run,
// as the controller would find drift too).
func (e *Engine) settledBaseline(ctx context.Context, cl *clusterv1.Cluster) (map[string]*unstructured.Unstructured, error) {
	if e.base == nil {
		return nil, nil
	}
	live := &clusterv1.Cluster{}
	if err := e.base.view.Get(ctx, client.ObjectKeyFromObject(cl), live); err != nil {
		return nil, nil // a Cluster only planned: nothing to compare with
	}
	if live.Status.ObservedGeneration != live.Generation || !conditions.IsTrue(live, clusterv1.ClusterTopologyReconciledCondition) {
		return nil, nil
	}
	s, partial, err := e.base.generate(ctx, live)
	if err != nil || partial != "" {
		return nil, nil // the live state does not generate: compare every object by dry run
	}
	out := map[string]*unstructured.Unstructured{}
	d := s.Desired
	add := func(objs ...client.Object) error {
		for _, o := range objs {
			if isNil(o) {
				continue
			}
			u, err := asUnstructured(o)
			if err != nil {
				return err
			}
			out[objectID(u)] = u
		}
		return nil
	}
	objs := []client.Object{d.Cluster, d.InfrastructureCluster}
	if d.ControlPlane != nil {
		objs = append(objs, d.ControlPlane.Object, d.ControlPlane.InfrastructureMachineTemplate)
		if d.ControlPlane.MachineHealthCheck != nil {
			objs = append(objs, d.ControlPlane.MachineHealthCheck)
		}
	}
	for _, md := range d.MachineDeployments {
		objs = append(objs, md.Object, md.InfrastructureMachineTemplate, md.BootstrapTemplate)
		if md.MachineHealthCheck != nil {
			objs = append(objs, md.MachineHealthCheck)
		}
	}
	for _, mp := range d.MachinePools {
		objs = append(objs, mp.Object, mp.InfrastructureMachinePoolObject, mp.BootstrapObject)
	}
	if err := add(objs...); err != nil {
		return nil, err
	}
	return out, nil
}

// asUnstructured is o as an unstructured object with its kind set.
func asUnstructured(o client.Object) (*unstructured.Unstructured, error) {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" {
		u.SetKind(kindOf(o))
	}
	return u, nil
}

// objectID names an object in a baseline: kind, namespace and name.
func objectID(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// unchangedHelper is the answer for an object the planned change leaves as the settled
// controller computed it: nothing to write.
type unchangedHelper struct{}

func (unchangedHelper) HasChanges() bool                      { return false }
func (unchangedHelper) HasSpecChanges() bool                  { return false }
func (unchangedHelper) PatchData() string                     { return "" }
func (unchangedHelper) Diff() string                          { return "" }
func (unchangedHelper) Patch(context.Context) (string, error) { return "", ErrWrite }

// dryRun asks the API server, as the controller does, what applying desired over current
// would change. current nil is a create. An object of a settled cluster whose desired state the
// planned change leaves identical needs no request: the controller wrote it already.
func (d *differ) dryRun(current, desired client.Object, ignore ...[]string) (structuredmerge.PatchHelper, error) {
	if d.baseline != nil {
		u, err := asUnstructured(desired)
		if err != nil {
			return nil, err
		}
		if b, ok := d.baseline[objectID(u)]; ok && equality.Semantic.DeepEqual(b.Object, u.Object) {
			return unchangedHelper{}, nil
		}
	}
	var opts []structuredmerge.HelperOption
	for _, p := range ignore {
		opts = append(opts, structuredmerge.IgnorePaths{p})
	}
	h, err := structuredmerge.NewServerSidePatchHelper(d.ctx, current, desired, d.c, noSSACache{}, opts...)
	if err != nil {
		return nil, fmt.Errorf("dry run for %s %s: %w", kindOf(desired), desired.GetName(), err)
	}
	return h, nil
}

func kindOf(o client.Object) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", o), "*v1beta2.")
}

// object records the change one object would get; it returns whether there is one, and
// whether it touches the spec.
func (d *differ) object(out *Outcome, current, desired client.Object, ignore ...[]string) (bool, bool, error) {
	if isNil(current) {
		out.Changes = append(out.Changes, Change{Kind: kindOf(desired), Name: desired.GetName(), Action: Create})
		return true, true, nil
	}
	h, err := d.dryRun(current, desired, ignore...)
	if err != nil {
		return false, false, err
	}
	if !h.HasChanges() {
		return false, false, nil
	}
	out.Changes = append(out.Changes, Change{Kind: kindOf(desired), Name: current.GetName(), Action: Update, Fields: fieldPaths(h.PatchData()), Diff: h.Diff()})
	return true, h.HasSpecChanges(), nil
}

// template records a referenced template's change: a spec change rotates it (a new template,
// which is what makes machines roll), a metadata change patches it in place.
func (d *differ) template(out *Outcome, current, desired *unstructured.Unstructured) (rotated bool, err error) {
	if current == nil {
		out.Changes = append(out.Changes, Change{Kind: desired.GetKind(), Name: desired.GetName(), Action: Create})
		return false, nil
	}
	h, err := d.dryRun(current, desired)
	if err != nil {
		return false, err
	}
	if !h.HasChanges() {
		return false, nil
	}
	action := Update
	if h.HasSpecChanges() {
		action = Rotate
	}
	out.Changes = append(out.Changes, Change{Kind: current.GetKind(), Name: current.GetName(), Action: action, Fields: fieldPaths(h.PatchData()), Diff: h.Diff()})
	return action == Rotate, nil
}

func isNil(o client.Object) bool {
	if o == nil {
		return true
	}
	switch v := o.(type) {
	case *unstructured.Unstructured:
		return v == nil
	case *clusterv1.MachineHealthCheck:
		return v == nil
	case *clusterv1.MachineDeployment:
		return v == nil
	case *clusterv1.MachinePool:
		return v == nil
	case *clusterv1.Cluster:
		return v == nil
	}
	return false
}

// fieldPaths lists the leaves of a JSON merge patch as dotted paths (at most 8 levels deep).
func fieldPaths(patch string) []string {
	if patch == "" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(patch), &m); err != nil {
		return nil
	}
	var out []string
	var walk func(prefix string, v any, depth int)
	walk = func(prefix string, v any, depth int) {
		mm, ok := v.(map[string]any)
		if !ok || len(mm) == 0 || depth == 8 {
			out = append(out, prefix)
			return
		}
		for k, sub := range mm {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			walk(p, sub, depth+1)
		}
	}
	walk("", m, 0)
	sort.Strings(out)
	return out
}

// endpointIgnores are the contract's paths the controller leaves to the provider when the
// desired object has them empty: the control plane endpoint's host and port.
func endpointIgnores(u *unstructured.Unstructured) [][]string {
	var out [][]string
	if h, ok, _ := unstructured.NestedString(u.Object, "spec", "controlPlaneEndpoint", "host"); ok && h == "" {
		out = append(out, []string{"spec", "controlPlaneEndpoint", "host"})
	}
	if p, ok, _ := unstructured.NestedInt64(u.Object, "spec", "controlPlaneEndpoint", "port"); ok && p == 0 {
		out = append(out, []string{"spec", "controlPlaneEndpoint", "port"})
	}
	return out
}

func (d *differ) compare(s *scope.Scope, out *Outcome) error {
	if s.Desired.InfrastructureCluster != nil {
		if _, _, err := d.object(out, s.Current.InfrastructureCluster, s.Desired.InfrastructureCluster, endpointIgnores(s.Desired.InfrastructureCluster)...); err != nil {
			return err
		}
	}
	if err := d.controlPlane(s, out); err != nil {
		return err
	}
	if _, _, err := d.object(out, s.Current.Cluster, s.Desired.Cluster); err != nil {
		return err
	}
	if err := d.machineDeployments(s, out); err != nil {
		return err
	}
	return d.machinePools(s, out)
}

func (d *differ) healthCheck(out *Outcome, current, desired *clusterv1.MachineHealthCheck) error {
	switch {
	case desired == nil && current == nil:
		return nil
	case desired == nil:
		out.Changes = append(out.Changes, Change{Kind: "MachineHealthCheck", Name: current.Name, Action: Delete})
		return nil
	}
	var cur client.Object
	if current != nil {
		cur = current
	}
	_, _, err := d.object(out, cur, desired)
	return err
}

// controlPlane follows the controller's order (health check, machine template, object) and
// decides whether the control plane's machines roll: a rotated machine template, a new
// version, or a changed kubeadm configuration do; labels, annotations, replicas and timeouts
// are propagated in place. (The KubeadmControlPlane's own rule is internal upstream; this is
// its v1.14 behaviour, checked against the real controller in the end-to-end tests.)
func (d *differ) controlPlane(s *scope.Scope, out *Outcome) error {
	cur, des := s.Current.ControlPlane, s.Desired.ControlPlane
	out.ControlPlane.Name = des.Object.GetName()
	if err := d.healthCheck(out, cur.MachineHealthCheck, des.MachineHealthCheck); err != nil {
		return err
	}
	if cur.Object == nil {
		out.Changes = append(out.Changes, Change{Kind: des.Object.GetKind(), Name: des.Object.GetName(), Action: Create})
		out.ControlPlane.Reason = "created"
		return nil
	}
	if s.UpgradeTracker.ControlPlane.IsPendingUpgrade {
		out.ControlPlane.Reason = "upgrade pending (the controller waits before changing the control plane)"
		return nil
	}
	var reasons []string
	if s.Blueprint.HasControlPlaneInfrastructureMachine() {
		rotated, err := d.template(out, cur.InfrastructureMachineTemplate, des.InfrastructureMachineTemplate)
		if err != nil {
			return err
		}
		if rotated {
			reasons = append(reasons, des.InfrastructureMachineTemplate.GetKind()+" rotated")
		}
	}
	changed, _, err := d.object(out, cur.Object, des.Object, endpointIgnores(des.Object)...)
	if err != nil {
		return err
	}
	if changed {
		curV, _, _ := unstructured.NestedString(cur.Object.Object, "spec", "version")
		desV, _, _ := unstructured.NestedString(des.Object.Object, "spec", "version")
		if curV != desV {
			reasons = append(reasons, fmt.Sprintf("version %s → %s", curV, desV))
		}
		for _, f := range out.Changes[len(out.Changes)-1].Fields {
			if strings.HasPrefix(f, "spec.kubeadmConfigSpec") {
				reasons = append(reasons, "spec.kubeadmConfigSpec changed")
				break
			}
		}
	}
	out.ControlPlane.RollsOut = len(reasons) > 0
	out.ControlPlane.Reason = strings.Join(reasons, "; ")
	if !out.ControlPlane.RollsOut && changed {
		out.ControlPlane.Reason = "changed in place"
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (d *differ) machineDeployments(s *scope.Scope, out *Outcome) error {
	names := map[string]bool{}
	for n := range s.Current.MachineDeployments {
		names[n] = true
	}
	for n := range s.Desired.MachineDeployments {
		names[n] = true
	}
	for _, name := range sortedKeys(names) {
		cur, des := s.Current.MachineDeployments[name], s.Desired.MachineDeployments[name]
		r, err := d.machineDeployment(s, out, name, cur, des)
		if err != nil {
			return err
		}
		out.MachineDeployments = append(out.MachineDeployments, r)
	}
	return nil
}

func (d *differ) machineDeployment(s *scope.Scope, out *Outcome, name string, cur, des *scope.MachineDeploymentState) (Rollout, error) {
	r := Rollout{Name: name}
	switch {
	case cur == nil:
		r.Class = mdClassOf(s.Current.Cluster, name)
		r.Reason = "created"
		for _, o := range []client.Object{des.InfrastructureMachineTemplate, des.BootstrapTemplate, des.Object} {
			out.Changes = append(out.Changes, Change{Kind: kindOf(o), Name: o.GetName(), Action: Create})
		}
		if des.MachineHealthCheck != nil {
			out.Changes = append(out.Changes, Change{Kind: "MachineHealthCheck", Name: des.MachineHealthCheck.Name, Action: Create})
		}
		return r, nil
	case des == nil:
		r.Reason = "deleted"
		out.Changes = append(out.Changes, Change{Kind: "MachineDeployment", Name: cur.Object.Name, Action: Delete})
		return r, nil
	}
	r.Class = mdClassOf(s.Current.Cluster, name)
	if err := d.healthCheck(out, cur.MachineHealthCheck, des.MachineHealthCheck); err != nil {
		return r, err
	}
	if !cur.Object.DeletionTimestamp.IsZero() {
		r.Reason = "being deleted"
		return r, nil
	}
	if s.UpgradeTracker.MachineDeployments.IsPendingUpgrade(cur.Object.Name) {
		r.RollsOut = true
		r.Reason = fmt.Sprintf("version %s → %s after the control plane", cur.Object.Spec.Template.Spec.Version, s.Current.Cluster.Spec.Topology.Version)
		return r, nil
	}
	infraRotated, err := d.template(out, cur.InfrastructureMachineTemplate, des.InfrastructureMachineTemplate)
	if err != nil {
		return r, err
	}
	bootRotated, err := d.template(out, cur.BootstrapTemplate, des.BootstrapTemplate)
	if err != nil {
		return r, err
	}
	changed, _, err := d.object(out, cur.Object, des.Object)
	if err != nil {
		return r, err
	}
	// What the MachineDeployment will look like once the controller points it at the rotated
	// templates, judged by upstream's own rollout rule.
	after := des.Object.DeepCopy()
	if infraRotated {
		after.Spec.Template.Spec.InfrastructureRef.Name += "-rotated"
	}
	if bootRotated {
		after.Spec.Template.Spec.Bootstrap.ConfigRef.Name += "-rotated"
	}
	upToDate, res := mdutil.MachineTemplateUpToDate(&cur.Object.Spec.Template, &after.Spec.Template)
	r.RollsOut = !upToDate
	var reasons []string
	if infraRotated {
		reasons = append(reasons, des.InfrastructureMachineTemplate.GetKind()+" rotated")
	}
	if bootRotated {
		reasons = append(reasons, des.BootstrapTemplate.GetKind()+" rotated")
	}
	for _, m := range res.LogMessages {
		if (infraRotated && strings.HasPrefix(m, "spec.infrastructureRef")) || (bootRotated && strings.HasPrefix(m, "spec.bootstrap")) {
			continue // said above, without the placeholder name
		}
		reasons = append(reasons, m)
	}
	switch {
	case r.RollsOut:
		r.Reason = strings.Join(reasons, "; ")
	case changed || infraRotated || bootRotated:
		r.Reason = "changed in place"
	}
	return r, nil
}

func mdClassOf(cl *clusterv1.Cluster, name string) string {
	for _, t := range cl.Spec.Topology.Workers.MachineDeployments {
		if t.Name == name {
			return t.Class
		}
	}
	return ""
}

func (d *differ) machinePools(s *scope.Scope, out *Outcome) error {
	names := map[string]bool{}
	for n := range s.Current.MachinePools {
		names[n] = true
	}
	for n := range s.Desired.MachinePools {
		names[n] = true
	}
	for _, name := range sortedKeys(names) {
		cur, des := s.Current.MachinePools[name], s.Desired.MachinePools[name]
		r := Rollout{Name: name}
		switch {
		case cur == nil:
			r.Reason = "created"
			out.Changes = append(out.Changes, Change{Kind: "MachinePool", Name: des.Object.Name, Action: Create})
		case des == nil:
			r.Reason = "deleted"
			out.Changes = append(out.Changes, Change{Kind: "MachinePool", Name: cur.Object.Name, Action: Delete})
		case s.UpgradeTracker.MachinePools.IsPendingUpgrade(cur.Object.Name):
			r.RollsOut = true
			r.Reason = fmt.Sprintf("version %s → %s after the control plane", cur.Object.Spec.Template.Spec.Version, s.Current.Cluster.Spec.Topology.Version)
		default:
			infra, err := d.template(out, cur.InfrastructureMachinePoolObject, des.InfrastructureMachinePoolObject)
			if err != nil {
				return err
			}
			boot, err := d.template(out, cur.BootstrapObject, des.BootstrapObject)
			if err != nil {
				return err
			}
			changed, _, err := d.object(out, cur.Object, des.Object)
			if err != nil {
				return err
			}
			version := cur.Object.Spec.Template.Spec.Version != des.Object.Spec.Template.Spec.Version
			r.RollsOut = infra || boot || version
			switch {
			case version:
				r.Reason = fmt.Sprintf("version %s → %s", cur.Object.Spec.Template.Spec.Version, des.Object.Spec.Template.Spec.Version)
			case infra || boot:
				r.Reason = "template rotated"
			case changed:
				r.Reason = "changed in place"
			}
		}
		out.MachinePools = append(out.MachinePools, r)
	}
	return nil
}
