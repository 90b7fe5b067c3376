// Package rollout restarts, pauses and resumes the rollout of MachineDeployments and control
// planes (KubeadmControlPlane, and any control plane with the contract's rollout fields), as
// clusterctl alpha rollout does, with the same errors; beyond it, MachineDeployments can be
// picked by label selector or all at once for a cluster, every target is checked before the first
// change, and a restart reports which Machines will be replaced.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/env"
)

// Action is what to do with the targets.
type Action string

const (
	Restart Action = "restart"
	Pause   Action = "pause"
	Resume  Action = "resume"
)

// Names and labels of the Cluster API contract.
const (
	controlPlaneGroup = "controlplane.cluster.x-k8s.io"
	pausedAnnotation  = "cluster.x-k8s.io/paused"
	clusterNameLabel  = "cluster.x-k8s.io/cluster-name"
	deploymentLabel   = "cluster.x-k8s.io/deployment-name"
	controlPlaneLabel = "cluster.x-k8s.io/control-plane-name"

	// The resource types clusterctl names in its errors.
	machineDeploymentType   = "machinedeployment"
	kubeadmControlPlaneType = "kubeadmcontrolplane"
)

var validResourceTypes = []string{machineDeploymentType, kubeadmControlPlaneType}

// Request is one rollout command.
type Request struct {
	Action Action
	// Resources are KIND/NAME arguments (kinds case-insensitive: machinedeployment,
	// kubeadmcontrolplane, or another control plane kind, singular, plural or short name).
	Resources []string
	// Namespace of the resources; empty: the kubeconfig context's.
	Namespace string
	// Selector picks MachineDeployments by label; All picks every MachineDeployment. Both are
	// limited to Cluster's MachineDeployments when Cluster is set.
	Selector string
	All      bool
	Cluster  string
	// DryRun checks everything and reports, changing nothing.
	DryRun bool
}

// Validate checks the request before any cluster call.
func (r *Request) Validate() error {
	if err := cluster.CheckNamespace(r.Namespace); err != nil {
		return err
	}
	switch r.Action {
	case Restart, Pause, Resume:
	default:
		return fmt.Errorf("unknown rollout action %q: use restart, pause or resume", r.Action)
	}
	bulk := r.All || r.Selector != ""
	if r.All && r.Selector != "" {
		return errors.New("--all and --selector exclude each other")
	}
	if bulk && len(r.Resources) > 0 {
		return errors.New("name resources (KIND/NAME) or select MachineDeployments with --all/--selector, not both")
	}
	if r.Cluster != "" && !bulk {
		return errors.New("--cluster limits --all or --selector to a cluster's MachineDeployments: add one of them")
	}
	if r.Selector != "" {
		if _, err := labels.Parse(r.Selector); err != nil {
			return fmt.Errorf("invalid --selector %q: %w", r.Selector, err)
		}
	}
	if !bulk {
		if len(r.Resources) == 0 {
			return errors.New("required resource not specified")
		}
		if _, err := parseResources(r.Resources); err != nil {
			return err
		}
	}
	return nil
}

type resourceArg struct{ Type, Name string }

// parseResources reads KIND/NAME arguments as clusterctl does (lower-cased, one slash).
func parseResources(args []string) ([]resourceArg, error) {
	slashes := 0
	for _, a := range args {
		if strings.Contains(a, "/") {
			slashes++
		}
	}
	switch {
	case slashes == 0:
		return nil, errors.New("arguments must be in resource/name format (e.g. machinedeployment/md-1)")
	case slashes != len(args):
		return nil, errors.New("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'capctl alpha rollout restart machinedeployment/md-1' instead of 'capctl alpha rollout restart machinedeployment machinedeployment/md-1')")
	}
	res := make([]resourceArg, 0, len(args))
	for _, a := range args {
		seg := strings.Split(strings.ToLower(a), "/")
		if len(seg) != 2 {
			return nil, errors.New("arguments in resource/name form may not have more than one slash")
		}
		if seg[0] == "" || seg[1] == "" {
			return nil, errors.New("arguments in resource/name form must have a single resource and name")
		}
		res = append(res, resourceArg{Type: seg[0], Name: seg[1]})
	}
	return res, nil
}

// Result is what the command did (or, with DryRun, would do).
type Result struct {
	Action Action   `json:"action"`
	DryRun bool     `json:"dryRun"`
	Time   string   `json:"rolloutAfter,omitempty"`
	Items  []Target `json:"targets"`
}

// Target is one object the action applies to.
type Target struct {
	// Ref is the resource as clusterctl writes it in errors: machinedeployment/md-0.
	Ref        string `json:"resource"`
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	Cluster    string `json:"cluster,omitempty"`
	Patch      string `json:"patch"`
	// Via names the field a restart sets when a Cluster's topology manages the target: the
	// Cluster's, which the topology controller copies onto the target (Patch is then the target's
	// operations of the Cluster's JSON patch, which test what the restart's decision read).
	Via      string    `json:"via,omitempty"`
	Machines []Machine `json:"machines,omitempty"`

	obj       *unstructured.Unstructured
	patchType types.PatchType
	// through is the Cluster patched instead of obj, with ops.
	through *unstructured.Unstructured
	ops     []jsonOp
}

// Machine is one Machine a restart replaces.
type Machine struct {
	Name    string `json:"name"`
	Phase   string `json:"phase,omitempty"`
	Version string `json:"version,omitempty"`
	Node    string `json:"node,omitempty"`
	Created string `json:"created,omitempty"`
}

// RefusedError lists every target the action refuses; nothing was changed.
type RefusedError struct{ Reasons []error }

func (e *RefusedError) Error() string {
	if len(e.Reasons) == 1 {
		return e.Reasons[0].Error()
	}
	msgs := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		msgs[i] = strings.TrimSpace(r.Error())
	}
	return fmt.Sprintf("%d resources refused (nothing was changed):\n  %s", len(e.Reasons), strings.Join(msgs, "\n  "))
}

func (e *RefusedError) Unwrap() []error { return e.Reasons }

// Run resolves the targets on the Env's management cluster, checks every one of them, and then
// (unless DryRun) patches them in order. A refused target refuses the whole command before any
// change. A restart's time is the Env's clock.
func Run(ctx context.Context, e env.Env, req Request) (*Result, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	ns := cluster.NamespaceOr(req.Namespace, c.Namespace)
	now := e.Clock()
	r := &resolver{c: c, ns: ns}
	targets, err := r.targets(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &Result{Action: req.Action, DryRun: req.DryRun}
	if req.Action == Restart {
		res.Time = now.UTC().Format(time.RFC3339)
	}
	var refused []error
	for i := range targets {
		t := &targets[i]
		if err := r.prepare(ctx, t, req.Action, now); err != nil {
			refused = append(refused, err)
		}
	}
	if len(refused) > 0 {
		return res, &RefusedError{Reasons: refused}
	}
	if req.Action == Restart {
		if err := r.machines(ctx, targets); err != nil {
			return nil, err
		}
	}
	res.Items = targets
	if err := checkPermissions(ctx, c, targets, ns); err != nil {
		return res, err
	}
	if req.DryRun {
		return res, nil
	}
	if err := apply(ctx, c, targets); err != nil {
		return res, err
	}
	return res, nil
}

// onePatch is one PATCH of a run: a target's own object, or one Cluster for all of its targets.
type onePatch struct {
	obj   *unstructured.Unstructured
	patch client.Patch
	refs  []string
	// cluster: the Cluster of topology targets, patched only as it was read.
	cluster bool
}

// patchesOf are the run's PATCHes in target order: each target's own, and one per Cluster (where
// its first target stands) for the targets its topology manages.
func patchesOf(targets []Target) ([]onePatch, error) {
	var out []onePatch
	at := map[*unstructured.Unstructured]int{}
	byCluster := map[*unstructured.Unstructured][]*Target{}
	for i := range targets {
		t := &targets[i]
		if t.through == nil {
			out = append(out, onePatch{obj: t.obj, patch: client.RawPatch(t.patchType, []byte(t.Patch)), refs: []string{t.Ref}})
			continue
		}
		if _, ok := at[t.through]; !ok {
			at[t.through] = len(out)
			out = append(out, onePatch{obj: t.through.DeepCopy(), cluster: true})
		}
		byCluster[t.through] = append(byCluster[t.through], t)
		out[at[t.through]].refs = append(out[at[t.through]].refs, t.Ref)
	}
	for cl, i := range at {
		body, err := clusterPatch(byCluster[cl])
		if err != nil {
			return nil, err
		}
		out[i].patch = client.RawPatch(types.JSONPatchType, body)
	}
	return out, nil
}

// apply sends the run's PATCHes in order, with opts (a server-side dry run); a failure says
// what was already done.
func apply(ctx context.Context, c *cluster.Client, targets []Target, opts ...client.PatchOption) error {
	patches, err := patchesOf(targets)
	if err != nil {
		return err
	}
	var done []string
	for _, p := range patches {
		err := c.Patch(ctx, p.obj, p.patch, opts...)
		if err == nil {
			done = append(done, p.refs...)
			continue
		}
		msg := fmt.Sprintf("failed while patching %s %s/%s: %v", p.obj.GetKind(), p.obj.GetNamespace(), p.obj.GetName(), err)
		if p.cluster && (apierrors.IsInvalid(err) || apierrors.IsConflict(err)) {
			msg = fmt.Sprintf("Cluster %s/%s changed after capctl read it, so nothing of it was patched (%s not restarted): %v", p.obj.GetNamespace(), p.obj.GetName(), strings.Join(p.refs, ", "), err)
		}
		if len(done) > 0 {
			return fmt.Errorf("%s (already done: %s; running the command again is safe for the rest)", msg, strings.Join(done, ", "))
		}
		return fmt.Errorf("%s (nothing was changed; run the command again)", msg)
	}
	return nil
}

// checkPermissions is the rollout's permission preflight (the table's "rollout" rules with the
// kinds of the named objects), before the first patch and in a dry run too, so that a dry run
// that passes means the rollout may be done: with several objects named, a missing permission
// found at the second patch left the first one rolled out.
func checkPermissions(ctx context.Context, c *cluster.Client, targets []Target, ns string) error {
	objs := make([]unstructured.Unstructured, 0, len(targets))
	for _, t := range targets {
		// A target a topology manages was read (get proven); its Cluster is patched instead.
		if t.through != nil {
			objs = append(objs, *t.through)
			continue
		}
		objs = append(objs, *t.obj)
	}
	kinds, err := authz.Resources(c.Mapper, objs)
	if err != nil {
		return err
	}
	return authz.Preflight(ctx, "rollout", authz.Expansion{Namespace: ns, Kinds: map[string][]string{authz.EveryRolledKind: kinds}},
		authz.Cluster{Side: authz.Management, Client: c, Host: c.Config.Host})
}

// resolver finds kinds and objects on the management cluster.
type resolver struct {
	c  *cluster.Client
	ns string

	versions map[string]string // preferred version by group
	// topologyFields: whether the Cluster kind has the topology rollout fields (nil: not read).
	topologyFields *bool
	// clusters are the Clusters read for topology-managed targets (nil: no topology).
	clusters map[client.ObjectKey]*unstructured.Unstructured
}

func (r *resolver) preferred(group string) (string, error) {
	if r.versions == nil {
		groups, err := r.c.Discovery.ServerGroups()
		if err != nil {
			return "", fmt.Errorf("discovering the management cluster's API groups: %w", err)
		}
		r.versions = map[string]string{}
		for _, g := range groups.Groups {
			r.versions[g.Name] = g.PreferredVersion.Version
		}
	}
	v, ok := r.versions[group]
	if !ok {
		return "", fmt.Errorf("the management cluster does not serve %s: is Cluster API installed (capctl init)?", group)
	}
	return v, nil
}

// kindOf maps a resource type argument to its kind.
func (r *resolver) kindOf(typ string) (schema.GroupVersionKind, *metav1.APIResource, error) {
	switch typ {
	case machineDeploymentType, "machinedeployments", "md":
		v, err := r.preferred(contract.Group)
		if err != nil {
			return schema.GroupVersionKind{}, nil, err
		}
		return schema.GroupVersionKind{Group: contract.Group, Version: v, Kind: "MachineDeployment"}, nil, nil
	}
	v, err := r.preferred(controlPlaneGroup)
	if err != nil {
		return schema.GroupVersionKind{}, nil, r.invalidType(typ)
	}
	list, err := r.c.Discovery.ServerResourcesForGroupVersion(controlPlaneGroup + "/" + v)
	if err != nil {
		return schema.GroupVersionKind{}, nil, fmt.Errorf("discovering %s/%s: %w", controlPlaneGroup, v, err)
	}
	for i := range list.APIResources {
		ar := &list.APIResources[i]
		if strings.Contains(ar.Name, "/") || strings.HasSuffix(ar.Kind, "Template") {
			continue
		}
		match := strings.ToLower(ar.Kind) == typ || ar.Name == typ || ar.SingularName == typ
		for _, s := range ar.ShortNames {
			match = match || s == typ
		}
		if match {
			return schema.GroupVersionKind{Group: controlPlaneGroup, Version: v, Kind: ar.Kind}, ar, nil
		}
	}
	return schema.GroupVersionKind{}, nil, r.invalidType(typ)
}

func (r *resolver) invalidType(typ string) error {
	return fmt.Errorf("Invalid resource type %q, valid values are %v (or another control plane kind of %s)", typ, validResourceTypes, controlPlaneGroup)
}

func (r *resolver) targets(ctx context.Context, req Request) ([]Target, error) {
	if req.All || req.Selector != "" {
		return r.machineDeployments(ctx, req)
	}
	args, err := parseResources(req.Resources)
	if err != nil {
		return nil, err
	}
	var out []Target
	seen := map[string]bool{}
	for _, a := range args {
		gvk, _, err := r.kindOf(a.Type)
		if err != nil {
			return nil, err
		}
		ref := strings.ToLower(gvk.Kind) + "/" + a.Name
		if seen[ref] {
			continue
		}
		seen[ref] = true
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := r.c.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: a.Name}, u); err != nil {
			return nil, fmt.Errorf("failed to fetch %s: failed to get %s %s/%s: %w", ref, gvk.Kind, r.ns, a.Name, err)
		}
		out = append(out, newTarget(ref, u))
	}
	return out, nil
}

func newTarget(ref string, u *unstructured.Unstructured) Target {
	cl, _, _ := unstructured.NestedString(u.Object, "spec", "clusterName")
	if cl == "" {
		cl = u.GetLabels()[clusterNameLabel]
	}
	return Target{Ref: ref, Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Namespace: u.GetNamespace(), Name: u.GetName(), Cluster: cl, obj: u}
}

// machineDeployments lists the MachineDeployments --all or --selector picks (one LIST); none is
// an error.
func (r *resolver) machineDeployments(ctx context.Context, req Request) ([]Target, error) {
	out, err := r.listMachineDeployments(ctx, req)
	if err != nil || len(out) > 0 {
		return out, err
	}
	what := "in namespace " + r.ns
	if req.Cluster != "" {
		what = fmt.Sprintf("of cluster %s/%s", r.ns, req.Cluster)
	}
	if req.Selector != "" {
		what += fmt.Sprintf(" matching %q", req.Selector)
	}
	return nil, fmt.Errorf("no MachineDeployments %s", what)
}

// listMachineDeployments lists the MachineDeployments req picks (All or Selector, limited to
// Cluster's), by name; none is no error.
func (r *resolver) listMachineDeployments(ctx context.Context, req Request) ([]Target, error) {
	v, err := r.preferred(contract.Group)
	if err != nil {
		return nil, err
	}
	sel := labels.Everything()
	if req.Selector != "" {
		if sel, err = labels.Parse(req.Selector); err != nil {
			return nil, fmt.Errorf("invalid --selector %q: %w", req.Selector, err)
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: contract.Group, Version: v, Kind: "MachineDeploymentList"})
	opts := []client.ListOption{client.InNamespace(r.ns), client.MatchingLabelsSelector{Selector: sel}}
	if err := r.c.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing MachineDeployments in %s: %w", r.ns, err)
	}
	var out []Target
	for i := range list.Items {
		t := newTarget(machineDeploymentType+"/"+list.Items[i].GetName(), &list.Items[i])
		if req.Cluster != "" && t.Cluster != req.Cluster {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// prepare checks the action against the target's state (clusterctl's rules and messages) and
// builds its patch.
func (r *resolver) prepare(ctx context.Context, t *Target, action Action, now time.Time) error {
	md := t.Kind == "MachineDeployment"
	kind := t.Kind
	// A MachineDeployment pauses with spec.paused, a control plane with the paused annotation.
	var paused bool
	if md {
		paused, _, _ = unstructured.NestedBool(t.obj.Object, "spec", "paused")
	} else {
		_, paused = t.obj.GetAnnotations()[pausedAnnotation]
	}
	gv, _ := schema.ParseGroupVersion(t.APIVersion)
	afterPath := []string{"spec", "rollout", "after"}
	if gv.Version == "v1beta1" {
		afterPath = []string{"spec", "rolloutAfter"}
	}
	switch action {
	case Restart:
		if paused {
			if md {
				return fmt.Errorf("can't restart paused MachineDeployment (run rollout resume first): %s", t.Ref)
			}
			return fmt.Errorf("can't restart paused %s (remove annotation '%s' first): %s", kind, pausedAnnotation, t.Ref)
		}
		if !md && t.Kind != "KubeadmControlPlane" {
			ok, err := r.hasField(ctx, gv.WithKind(kind), afterPath)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("can't restart %s: its CRD has no %s (the control plane contract's rollout field), so it cannot be restarted this way: %s", kind, strings.Join(afterPath, "."), t.Ref)
			}
		}
		if s, ok, _ := unstructured.NestedString(t.obj.Object, afterPath...); ok && s != "" {
			if at, err := time.Parse(time.RFC3339, s); err == nil && at.After(now) {
				return fmt.Errorf("can't update %s (remove '%s' first): %s", kind, strings.Join(afterPath, "."), t.Ref)
			}
		}
		cl, err := r.topologyCluster(ctx, t)
		if err != nil {
			return err
		}
		if cl != nil {
			return restartThroughTopology(t, cl, now)
		}
		t.patchType = types.MergePatchType
		t.Patch = mergePatch(afterPath, fmt.Sprintf("%q", now.UTC().Format(time.RFC3339)))
	case Pause:
		if paused {
			return fmt.Errorf("%s is already paused: %s", kind, t.Ref)
		}
		t.patchType = types.MergePatchType
		if md {
			t.Patch = `{"spec":{"paused":true}}`
		} else {
			t.Patch = fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, pausedAnnotation)
		}
	case Resume:
		if !paused {
			return fmt.Errorf("%s is not currently paused: %s", kind, t.Ref)
		}
		if md {
			t.patchType = types.MergePatchType
			t.Patch = `{"spec":{"paused":false}}`
		} else {
			t.patchType = types.JSONPatchType
			t.Patch = fmt.Sprintf(`[{"op":"remove","path":"/metadata/annotations/%s"}]`, strings.ReplaceAll(pausedAnnotation, "/", "~1"))
		}
	}
	return nil
}

func mergePatch(p []string, value string) string {
	s := value
	for i := len(p) - 1; i >= 0; i-- {
		s = fmt.Sprintf(`{%q:%s}`, p[i], s)
	}
	return s
}

// hasField reports whether the CRD of gvk declares the field at p in gvk's version.
func (r *resolver) hasField(ctx context.Context, gvk schema.GroupVersionKind, p []string) (bool, error) {
	mapping, err := r.c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, fmt.Errorf("finding the resource of %s: %w", gvk.Kind, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	name := mapping.Resource.Resource + "." + gvk.Group
	if err := r.c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != gvk.Version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		s := v.Schema.OpenAPIV3Schema
		for _, seg := range p {
			next, ok := s.Properties[seg]
			if !ok {
				return false, nil
			}
			s = &next
		}
		return true, nil
	}
	return false, nil
}

// machines fills in the Machines each restart target will replace: every Machine it owns now
// (rollout.after set to now replaces all Machines created before it), with one LIST per namespace.
func (r *resolver) machines(ctx context.Context, targets []Target) error {
	v, err := r.preferred(contract.Group)
	if err != nil {
		return err
	}
	byNS := map[string][]unstructured.Unstructured{}
	for i := range targets {
		ns := targets[i].Namespace
		if _, ok := byNS[ns]; ok {
			continue
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: contract.Group, Version: v, Kind: "MachineList"})
		if err := r.c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("listing Machines in %s: %w", ns, err)
		}
		byNS[ns] = list.Items
	}
	for i := range targets {
		t := &targets[i]
		for _, m := range byNS[t.Namespace] {
			if m.GetDeletionTimestamp() != nil || !owns(t, &m) {
				continue
			}
			phase, _, _ := unstructured.NestedString(m.Object, "status", "phase")
			ver, _, _ := unstructured.NestedString(m.Object, "spec", "version")
			node, _, _ := unstructured.NestedString(m.Object, "status", "nodeRef", "name")
			t.Machines = append(t.Machines, Machine{Name: m.GetName(), Phase: phase, Version: ver, Node: node,
				Created: m.GetCreationTimestamp().UTC().Format(time.RFC3339)})
		}
		sort.Slice(t.Machines, func(a, b int) bool { return t.Machines[a].Name < t.Machines[b].Name })
	}
	return nil
}

// owns tells whether machine m belongs to target t: by the labels the MachineDeployment and
// control plane controllers set, or by a controller reference to the control plane.
func owns(t *Target, m *unstructured.Unstructured) bool {
	l := m.GetLabels()
	if t.Kind == "MachineDeployment" {
		return l[deploymentLabel] == t.Name
	}
	if l[controlPlaneLabel] == t.Name {
		return true
	}
	for _, o := range m.GetOwnerReferences() {
		if o.Kind == t.Kind && o.Name == t.Name {
			return true
		}
	}
	return false
}
