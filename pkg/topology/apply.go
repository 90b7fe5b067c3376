package topology

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/health"
)

// ApplyRequest is `capctl topology apply --plan FILE`: the ClusterClass change a topology plan
// computed, rolled out as a rebase (the changed class and templates created under new names,
// the planned clusters moved onto them wave by wave through the fleet rollout engine).
type ApplyRequest struct {
	// Plan is the path of the file `topology plan --save` wrote.
	Plan string
	// ClassName is the new class's name; empty: the old name and a short digest of the plan's
	// inputs (so a re-run, or the same change planned again, names the same class).
	ClassName string
	// Rollout is how the waves are rolled (canary, parallelism, failures, soak, gate, window).
	Rollout fleetupgrade.Rollout
	NoWait  bool
	// Timeout bounds one cluster's rebase; PollInterval is how often it is read meanwhile.
	Timeout, PollInterval time.Duration
	// ClassTimeout bounds the wait for the new class to be reconciled by the Cluster API
	// controller (upstream admission validates a Cluster against a reconciled class only).
	ClassTimeout time.Duration
	// Health is the soak's look at a cluster (diagnose's rules, wired by the caller).
	Health health.Check
	// Rollback moves the plan's clusters that are on the new class back onto the old one, wave by
	// wave through the same engine; nothing is created.
	Rollback bool
	// PruneOldClass deletes the old class once the run has moved every planned cluster and no
	// Cluster uses it any more (its templates are left: other classes may use them).
	PruneOldClass bool
}

// Defaults of an ApplyRequest.
const DefaultClassTimeout = 2 * time.Minute

// planFileMax bounds the plan file read: objects and thousands of clusters' changes are a few
// MiB.
const planFileMax int64 = 32 << 20

// Annotations on the objects topology apply creates: the plan they were made from (a re-run
// reuses them, a foreign object of that name is refused) and the class they replace.
const (
	PlanAnnotation        = "capctl.io/topology-plan"
	RebasedFromAnnotation = "capctl.io/rebased-from"
)

// Validate checks the request before anything is read.
func (r ApplyRequest) Validate() error {
	if r.Plan == "" {
		return errors.New("--plan is required: the file `capctl topology plan -f ... --save FILE` wrote")
	}
	if r.Rollback && r.PruneOldClass {
		return errors.New("--rollback and --prune-old-class cannot be used together: a rollback moves the clusters back onto the old class")
	}
	if r.ClassName != "" {
		if errs := validation.IsDNS1123Subdomain(r.ClassName); len(errs) > 0 {
			return fmt.Errorf("--class-name %q: %s", r.ClassName, strings.Join(errs, "; "))
		}
	}
	return nil
}

// rebasePlan is a plan file resolved into what apply writes: per management cluster, the class
// moved from, the objects to create, and the clusters to move.
type rebasePlan struct {
	file      *PlanFile
	namespace string
	from, to  string
	// objects are the templates then the class to create (namespace set), by management cluster.
	objects map[string][]*unstructured.Unstructured
	// classes are the live classes the plan read, by management cluster.
	classes map[string]LiveObject
	rebase  fleetupgrade.Rebase
	// renamed are the changed templates' new names, by "Kind/name".
	renamed map[string]string
}

// LoadPlan reads a topology plan file, bounded and strictly, and checks its digest.
func LoadPlan(ctx context.Context, path string) (*PlanFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("plan file %s is not a regular file (%s): save the plan with `capctl topology plan -f ... --save FILE` and pass that", path, userinput.FileKind(st.Mode()))
	}
	data, err := userinput.ReadFile(ctx, path)
	if (err != nil && userinput.IsTooLarge(err)) || int64(len(data)) > planFileMax {
		return nil, fmt.Errorf("plan file %s is larger than %s: it is not a plan capctl saved", path, userinput.Human(planFileMax))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	pf := &PlanFile{}
	if err := userinput.DecodeJSONStrict(data, pf); err != nil {
		return nil, fmt.Errorf("plan file %s is not a topology plan capctl saved: %w; save one with `capctl topology plan -f ... --save %s`", path, err, path)
	}
	if pf.APIVersion != PlanFileAPIVersion || pf.Kind != PlanFileKind {
		return nil, fmt.Errorf("plan file %s is apiVersion %q kind %q: topology apply reads apiVersion %s kind %s", path, pf.APIVersion, pf.Kind, PlanFileAPIVersion, PlanFileKind)
	}
	want, err := pf.digest()
	if err != nil {
		return nil, err
	}
	if pf.Digest != want {
		return nil, fmt.Errorf("plan file %s was edited after it was saved (it says digest %s, its content is %s): make and review a new plan", path, orNone(pf.Digest), want)
	}
	return pf, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// resolveRebase turns the plan into a rebase: one class (the same namespace and name on every
// management cluster) whose clusters all have a computed, admitted plan; the changed templates
// and the class get new names.
func resolveRebase(pf *PlanFile, className string) (*rebasePlan, error) {
	var problems []string
	for _, o := range pf.Objects {
		if o.GetKind() == "Cluster" {
			problems = append(problems, fmt.Sprintf("the plan changes Cluster %s: topology apply rolls out class and template changes; apply a Cluster change with kubectl apply, and plan the class change without it", o.GetName()))
		}
	}
	rp := &rebasePlan{file: pf, objects: map[string][]*unstructured.Unstructured{}, classes: map[string]LiveObject{}}
	for _, l := range pf.Live {
		if l.Kind != "ClusterClass" {
			continue
		}
		if rp.from != "" && (l.Namespace != rp.namespace || l.Name != rp.from) {
			problems = append(problems, fmt.Sprintf("the plan reaches ClusterClass %s/%s and %s/%s: topology apply rolls out one class at a time; plan each alone", rp.namespace, rp.from, l.Namespace, l.Name))
			continue
		}
		rp.namespace, rp.from = l.Namespace, l.Name
		rp.classes[l.ManagementCluster] = l
	}
	if rp.from == "" {
		problems = append(problems, "the plan reaches no existing ClusterClass: nothing to roll out")
	}
	changed := false
	for _, c := range pf.Clusters {
		switch {
		case c.Refused != "":
			problems = append(problems, fmt.Sprintf("cluster %s: the plan says upstream admission refuses it: %s", placeOf(c), c.Refused))
		case c.Partial != "":
			problems = append(problems, fmt.Sprintf("cluster %s: the plan is partial: %s", placeOf(c), c.Partial))
		case c.Class != rp.from && rp.from != "":
			problems = append(problems, fmt.Sprintf("cluster %s uses ClusterClass %s, not %s", placeOf(c), c.Class, rp.from))
		}
		changed = changed || c.Changed()
	}
	if len(pf.Clusters) == 0 {
		problems = append(problems, "the plan has no cluster: nothing to roll out")
	} else if !changed && len(problems) == 0 {
		problems = append(problems, "the plan changes no cluster: nothing to roll out")
	}
	if len(problems) > 0 {
		return nil, &RefusedPlanError{Problems: problems}
	}
	short := inputsDigest(pf.Inputs)
	rp.to = className
	if rp.to == "" {
		rp.to = rp.from + "-" + short
	}
	if rp.to == rp.from {
		return nil, fmt.Errorf("--class-name %s is the class the clusters use: the new class needs another name", rp.to)
	}
	if errs := validation.IsDNS1123Subdomain(rp.to); len(errs) > 0 {
		return nil, fmt.Errorf("the new class name %q: %s: choose one with --class-name", rp.to, strings.Join(errs, "; "))
	}
	rp.rebase = fleetupgrade.Rebase{Namespace: rp.namespace, From: rp.from, To: rp.to}
	gen := map[string]LiveObject{}
	for _, l := range pf.Live {
		if l.Kind == "Cluster" {
			gen[l.ManagementCluster+"/"+l.Namespace+"/"+l.Name] = l
		}
	}
	for _, c := range pf.Clusters {
		l, ok := gen[c.ManagementCluster+"/"+c.Namespace+"/"+c.Name]
		if !ok {
			return nil, fmt.Errorf("cluster %s has no live record in the plan file: save the plan again with this capctl", placeOf(c))
		}
		rp.rebase.Clusters = append(rp.rebase.Clusters, fleetupgrade.RebaseCluster{ManagementCluster: c.ManagementCluster, Namespace: c.Namespace, Name: c.Name,
			UID: l.UID, Generation: l.Generation, RollsOut: rollsOut(c)})
	}
	for mc := range rp.classes {
		objs, err := rp.newObjects(short)
		if err != nil {
			return nil, err
		}
		rp.objects[mc] = objs
	}
	return rp, nil
}

// RefusedPlanError is a plan topology apply does not roll out; every reason is listed.
type RefusedPlanError struct{ Problems []string }

func (e *RefusedPlanError) Error() string {
	return "topology apply refuses the plan, nothing was changed:\n  - " + strings.Join(e.Problems, "\n  - ")
}

func placeOf(c ClusterPlan) string {
	if c.ManagementCluster != "" {
		return c.ManagementCluster + ":" + c.Namespace + "/" + c.Name
	}
	return c.Namespace + "/" + c.Name
}

// rollsOut are the parts the plan predicts replace their machines, named as the rebase's
// record names them.
func rollsOut(c ClusterPlan) []string {
	out := []string{}
	if c.ControlPlane.RollsOut {
		out = append(out, "control plane")
	}
	for _, md := range c.MachineDeployments {
		if md.RollsOut {
			out = append(out, "MachineDeployment "+md.Name)
		}
	}
	sort.Strings(out)
	return out
}

// inputsDigest is 8 hex digits of the inputs' digests: the same change gives the same names.
func inputsDigest(in []Input) string {
	var parts []string
	for _, i := range in {
		parts = append(parts, i.Kind+"/"+i.Namespace+"/"+i.Name+"="+i.Digest)
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\n")))
	return hex.EncodeToString(sum[:])[:8]
}

// newObjects are the changed templates under name-short and the class under the new name with
// its references to them renamed, each in the class's namespace, carrying only what a user
// sets (labels, annotations, spec) and the plan's annotations.
func (rp *rebasePlan) newObjects(short string) ([]*unstructured.Unstructured, error) {
	var templates []*unstructured.Unstructured
	var class *unstructured.Unstructured
	renamed := map[string]string{}
	for i := range rp.file.Objects {
		o := &rp.file.Objects[i]
		ns := o.GetNamespace()
		if ns != "" && ns != rp.namespace {
			continue
		}
		switch {
		case o.GetKind() == "ClusterClass" && o.GetName() == rp.from:
			class = clean(o, rp.to, rp.namespace)
		case o.GetKind() == "ClusterClass":
		default:
			name := o.GetName() + "-" + short
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return nil, fmt.Errorf("the new name of %s %s, %q: %s", o.GetKind(), o.GetName(), name, strings.Join(errs, "; "))
			}
			renamed[o.GetKind()+"/"+o.GetName()] = name
			templates = append(templates, clean(o, name, rp.namespace))
		}
	}
	if class == nil {
		// Only templates changed: the class is the live one, read when applying.
		class = &unstructured.Unstructured{}
		class.SetAPIVersion("cluster.x-k8s.io/v1beta2")
		class.SetKind("ClusterClass")
		class.SetName(rp.to)
		class.SetNamespace(rp.namespace)
	}
	for _, o := range append(templates, class) {
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[PlanAnnotation] = rp.file.Digest
		a[RebasedFromAnnotation] = rp.from
		o.SetAnnotations(a)
	}
	rp.renamed = renamed
	return append(templates, class), nil
}

func clean(o *unstructured.Unstructured, name, namespace string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind()}}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(o.GetLabels())
	a := o.GetAnnotations()
	delete(a, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(a)
	if spec, ok := o.Object["spec"]; ok {
		u.Object["spec"] = spec
	}
	return u
}

// renameRefs points every templateRef of the class's spec at the renamed templates.
func renameRefs(v any, renamed map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if ref, ok := c.(map[string]any); ok && k == "templateRef" {
				kind, _ := ref["kind"].(string)
				name, _ := ref["name"].(string)
				if n, ok := renamed[kind+"/"+name]; ok {
					ref["name"] = n
				}
			}
			renameRefs(c, renamed)
		}
	case []any:
		for _, c := range t {
			renameRefs(c, renamed)
		}
	}
}

// Apply rolls a topology plan out as a ClusterClass rebase. Before anything is written, the
// plan is checked (digest, one class, every cluster computed and admitted) and compared with
// every management cluster (the planned clusters and the class not changed since); then the
// changed templates and the class are created under new names (reused when a re-run finds them
// made from this plan), and the clusters are moved wave by wave (fleetupgrade.Roll, the engine). A run the
// engine refuses before its first patch removes what this run created.
func Apply(ctx context.Context, e env.Env, req ApplyRequest) (*fleetupgrade.FleetApplyReport, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	pf, err := LoadPlan(ctx, req.Plan)
	if err != nil {
		return nil, err
	}
	rp, err := resolveRebase(pf, req.ClassName)
	if err != nil {
		return nil, err
	}
	members := map[string]*cluster.Client{}
	var fleet []fleetupgrade.FleetMember
	for _, m := range e.Management {
		if m.Err != nil {
			return nil, fmt.Errorf("management cluster %s cannot be used: %w", m.Context, m.Err)
		}
		name := ""
		if e.Several() {
			name = m.Context
		}
		members[name] = m.Client
		fleet = append(fleet, fleetupgrade.FleetMember{Name: name, Client: m.Client})
	}
	for mc := range rp.classes {
		if members[mc] == nil {
			return nil, fmt.Errorf("the plan was made on management cluster %q, which this run does not reach: pass the plan's contexts (--contexts)", mc)
		}
	}
	// Before the first write: the clusters and the class as planned.
	infos, err := fleetupgrade.ReadFleets(ctx, fleet, fleetupgrade.FleetSelection{})
	if err != nil {
		return nil, err
	}
	drifts := rp.rebase.Drift(infos)
	for mc, l := range rp.classes {
		if d := classDrift(ctx, members[mc], l); d != "" {
			drifts = append(drifts, d)
		}
	}
	// Before the first write: the permissions every step needs (a run that could create the
	// class but not move a cluster, or not undo, would leave half a change).
	for mc := range rp.classes {
		if err := checkPermissions(ctx, members[mc], rp, rp.objects[mc]); err != nil {
			return nil, err
		}
	}
	if req.Rollback {
		return rollback(ctx, e, req, rp, infos)
	}
	if len(drifts) > 0 {
		return nil, &fleetupgrade.DriftError{Path: req.Plan, Before: "before the first write", Drifts: drifts,
			Remedy: "make a new plan with `capctl topology plan -f ... --save`, review it, and apply that one"}
	}
	e.Stepf("Rebasing %d cluster(s) from ClusterClass %s/%s to %s", len(rp.rebase.Clusters), rp.namespace, rp.from, rp.to)
	var created []createdObject
	for mc, objs := range rp.objects {
		made, err := createObjects(ctx, mc, members[mc], objs, rp, e.Stepf)
		created = append(created, made...)
		if err != nil {
			undo(members, created, e.Stepf)
			return nil, err
		}
	}
	for mc := range rp.objects {
		if err := waitReconciled(ctx, members[mc], rp.namespace, rp.to, req.ClassTimeout); err != nil {
			undo(members, created, e.Stepf)
			return nil, err
		}
	}
	freq := fleetupgrade.FleetApplyRequest{Rebase: &rp.rebase, Rollout: req.Rollout, NoWait: req.NoWait, Timeout: req.Timeout, PollInterval: req.PollInterval, Health: req.Health}
	rep, err := fleetupgrade.Roll(ctx, e, freq)
	var pe *fleetupgrade.PreflightError
	var de *fleetupgrade.DriftError
	if errors.As(err, &pe) || errors.As(err, &de) {
		// Refused before the first patch: the class made for it goes too.
		undo(members, created, e.Stepf)
	}
	if err == nil && req.PruneOldClass {
		for mc := range rp.classes {
			if err := pruneClass(ctx, members[mc], rp.namespace, rp.from, e.Stepf); err != nil {
				return rep, err
			}
		}
	}
	return rep, err
}

// rollback moves the plan's clusters that are on the new class back onto the old one, through
// the engine (Rebase the other way; generations are not compared: the rebase changed them). A
// cluster on neither class, gone or recreated is refused before any write. The old class exists:
// checkPermissions read it.
func rollback(ctx context.Context, e env.Env, req ApplyRequest, rp *rebasePlan, infos []fleetupgrade.ClusterInfo) (*fleetupgrade.FleetApplyReport, error) {
	back := fleetupgrade.Rebase{Namespace: rp.namespace, From: rp.to, To: rp.from}
	for _, c := range rp.rebase.Clusters {
		c.Generation = 0
		back.Clusters = append(back.Clusters, c)
	}
	if drifts := back.Drift(infos); len(drifts) > 0 {
		return nil, &fleetupgrade.DriftError{Path: req.Plan, Before: "before the rollback's first write", Drifts: drifts,
			Remedy: "the rollback moves only the plan's clusters that are on the new class or the old one"}
	}
	e.Stepf("Rolling back %d cluster(s) from ClusterClass %s/%s to %s", len(back.Clusters), rp.namespace, rp.to, rp.from)
	return fleetupgrade.Roll(ctx, e, fleetupgrade.FleetApplyRequest{Rebase: &back, Rollout: req.Rollout, NoWait: req.NoWait, Timeout: req.Timeout, PollInterval: req.PollInterval, Health: req.Health})
}

var classGVK = schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"}

// pruneClass deletes the old class when no Cluster of the management cluster uses it; the
// Clusters that still do are named.
func pruneClass(ctx context.Context, c *cluster.Client, namespace, name string, progress func(string, ...any)) error {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterList"})
	if err := c.List(ctx, l); err != nil {
		return fmt.Errorf("--prune-old-class: listing the Clusters that may use ClusterClass %s/%s: %w", namespace, name, err)
	}
	var users []string
	for _, cl := range l.Items {
		n, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name")
		ns, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "namespace")
		if ns == "" {
			ns = cl.GetNamespace()
		}
		if n == name && ns == namespace {
			users = append(users, cl.GetNamespace()+"/"+cl.GetName())
		}
	}
	if len(users) > 0 {
		return fmt.Errorf("--prune-old-class: ClusterClass %s/%s is still used by %s: it was kept", namespace, name, strings.Join(users, ", "))
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(classGVK)
	u.SetNamespace(namespace)
	u.SetName(name)
	if err := c.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("--prune-old-class: deleting ClusterClass %s/%s: %w", namespace, name, err)
	}
	progress("Deleted the old ClusterClass %s/%s: no Cluster uses it (its templates were left)", namespace, name)
	return nil
}

// checkPermissions checks the "topology apply" permissions (pkg/authz's table) on one management
// cluster, its placeholders filled from the plan: the changed templates' kinds and the control
// plane kind of the old class.
func checkPermissions(ctx context.Context, c *cluster.Client, rp *rebasePlan, objs []*unstructured.Unstructured) error {
	var templates []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "ClusterClass" {
			templates = append(templates, *o)
		}
	}
	tmplRes, err := authz.Resources(c.Mapper, templates)
	if err != nil {
		return err
	}
	class := &unstructured.Unstructured{}
	class.SetGroupVersionKind(classGVK)
	if err := c.Get(ctx, types.NamespacedName{Namespace: rp.namespace, Name: rp.from}, class); apierrors.IsNotFound(err) {
		return fmt.Errorf("ClusterClass %s/%s, the class the plan was made from, does not exist: a rollback needs it (it is where the clusters go back to)", rp.namespace, rp.from)
	} else if err != nil {
		return fmt.Errorf("reading ClusterClass %s/%s: %w", rp.namespace, rp.from, err)
	}
	apiVersion, _, _ := unstructured.NestedString(class.Object, "spec", "controlPlane", "templateRef", "apiVersion")
	kind, _, _ := unstructured.NestedString(class.Object, "spec", "controlPlane", "templateRef", "kind")
	cp := &unstructured.Unstructured{}
	cp.SetAPIVersion(apiVersion)
	cp.SetKind(strings.TrimSuffix(kind, "Template")) // the object a control plane template stamps
	cpRes, err := authz.Resources(c.Mapper, []unstructured.Unstructured{*cp})
	if err != nil {
		return fmt.Errorf("the control plane kind of ClusterClass %s/%s: %w", rp.namespace, rp.from, err)
	}
	x := authz.Expansion{Kinds: map[string][]string{authz.EveryPlannedTemplateKind: tmplRes, authz.EveryControlPlaneKind: cpRes}}
	return authz.Preflight(ctx, "topology apply", x, authz.Cluster{Side: authz.Management, Client: c, Host: c.Config.Host})
}

// classDrift says how the live class differs from the plan's, or "".
func classDrift(ctx context.Context, c *cluster.Client, l LiveObject) string {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
	if err := c.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: l.Name}, u); err != nil {
		return fmt.Sprintf("ClusterClass %s/%s: %v", l.Namespace, l.Name, err)
	}
	switch {
	case string(u.GetUID()) != l.UID:
		return fmt.Sprintf("ClusterClass %s/%s was recreated since the plan: plan again", l.Namespace, l.Name)
	case u.GetGeneration() != l.Generation:
		return fmt.Sprintf("ClusterClass %s/%s changed since the plan (generation %d, planned at %d): plan again", l.Namespace, l.Name, u.GetGeneration(), l.Generation)
	}
	return ""
}

type createdObject struct {
	management string
	obj        *unstructured.Unstructured
}

// createObjects creates the templates then the class on one management cluster; an object of
// that name made from this plan is reused (a re-run), any other is refused.
func createObjects(ctx context.Context, mc string, c *cluster.Client, objs []*unstructured.Unstructured, rp *rebasePlan, progress func(string, ...any)) ([]createdObject, error) {
	var made []createdObject
	for _, o := range objs {
		o = o.DeepCopy()
		if o.GetKind() == "ClusterClass" {
			if o.Object["spec"] == nil {
				live := &unstructured.Unstructured{}
				live.SetGroupVersionKind(o.GroupVersionKind())
				if err := c.Get(ctx, types.NamespacedName{Namespace: rp.namespace, Name: rp.from}, live); err != nil {
					return made, fmt.Errorf("reading ClusterClass %s/%s: %w", rp.namespace, rp.from, err)
				}
				o.Object["spec"] = live.Object["spec"]
			}
			renameRefs(o.Object["spec"], rp.renamed)
		}
		what := fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		if mc != "" {
			// Over several management clusters each creates its own copy: say whose.
			what += " on " + mc
		}
		found, err := reusable(ctx, c, o, rp.file.Digest, what)
		if err != nil {
			return made, err
		}
		if found {
			progress("  %s exists, made from this plan: reused", what)
			continue
		}
		if err := c.Create(ctx, o); apierrors.IsAlreadyExists(err) {
			// A second operator's run of the same plan created it meanwhile: the same object.
			if found, err = reusable(ctx, c, o, rp.file.Digest, what); err != nil || !found {
				return made, fmt.Errorf("creating %s: %w", what, err)
			}
			progress("  %s was created meanwhile from this plan: reused", what)
			continue
		} else if err != nil {
			return made, fmt.Errorf("creating %s: %w", what, err)
		}
		made = append(made, createdObject{management: mc, obj: o})
		progress("  created %s", what)
	}
	return made, nil
}

// reusable reads the object of o's name: absent (false), made from this plan with o's spec
// (true), or anything else (an error naming the way out).
func reusable(ctx context.Context, c *cluster.Client, o *unstructured.Unstructured, digest, what string) (bool, error) {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(o), cur)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s: %w", what, err)
	case cur.GetAnnotations()[PlanAnnotation] != digest || !equality.Semantic.DeepEqual(cur.Object["spec"], o.Object["spec"]):
		return false, fmt.Errorf("%s exists and was not made from this plan: choose another class name with --class-name, or delete it", what)
	}
	return true, nil
}

// undo deletes what this run created, newest first; what cannot be deleted is named.
func undo(members map[string]*cluster.Client, created []createdObject, progress func(string, ...any)) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(created) - 1; i >= 0; i-- {
		o := created[i]
		what := fmt.Sprintf("%s %s/%s", o.obj.GetKind(), o.obj.GetNamespace(), o.obj.GetName())
		if err := members[o.management].Delete(ctx, o.obj); err != nil && !apierrors.IsNotFound(err) {
			progress("  could not delete %s this run created: %v (delete it by hand)", what, err)
			continue
		}
		progress("  deleted %s (created by this run, which changed no cluster)", what)
	}
}

// waitReconciled waits until the Cluster API controller has reconciled the class (its
// observedGeneration): the Cluster webhook validates a rebase only against a reconciled class.
func waitReconciled(ctx context.Context, c *cluster.Client, namespace, name string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultClassTimeout
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"})
	var last string
	err := cluster.Poll(ctx, time.Second, timeout, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, u); err != nil {
			last = err.Error()
			return false, nil
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		last = fmt.Sprintf("generation %d, observed %d", u.GetGeneration(), og)
		return og >= u.GetGeneration(), nil
	})
	if err != nil {
		return fmt.Errorf("ClusterClass %s/%s was not reconciled by the Cluster API controller within %s (%s): is the core controller running? nothing was rebased", namespace, name, timeout, last)
	}
	return nil
}
