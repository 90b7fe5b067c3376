package topology

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/topologyengine"
)

// ClusterPlan is what the topology controller would do to one Cluster.
type ClusterPlan struct {
	ManagementCluster string `json:"managementCluster"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Class             string `json:"class"`
	topologyengine.Outcome
	// Refused is upstream admission's answer when the change would be refused, or "".
	Refused string `json:"refused"`
}

// PlanResult is the plan of every cluster the change reaches.
type PlanResult struct {
	Inputs   []Input       `json:"inputs"`
	Clusters []ClusterPlan `json:"clusters"`
	// ManagementClusters is set with --contexts/--all-contexts.
	ManagementClusters []multicluster.ManagementCluster `json:"managementClusters,omitempty"`
	// Notes say what the inputs reached nothing of (a class no cluster uses).
	Notes []string `json:"notes,omitempty"`
	// SavedTo is the --save path.
	SavedTo string `json:"savedTo,omitempty"`
	// live is what the plan file records of the planned clusters and reached classes.
	live []LiveObject
}

// Partial reports whether some part was not read or not computed.
func (r *PlanResult) Partial() bool {
	for _, m := range r.ManagementClusters {
		if !m.Reachable || m.Error != "" {
			return true
		}
	}
	for _, c := range r.Clusters {
		if c.Partial != "" {
			return true
		}
	}
	return false
}

// Exit codes of topology plan, as kubectl diff's: nothing changes, something changes, and
// above 1 what is not a plan of every cluster.
const (
	ExitNoChanges = 0
	ExitChanges   = 1
	ExitRefused   = 2
	ExitPartial   = 3
)

// ExitCode is the plan's exit code: partial outranks refused, which outranks changes.
func (r *PlanResult) ExitCode() int {
	refused, changed := false, false
	for _, c := range r.Clusters {
		refused = refused || c.Refused != ""
		changed = changed || c.Changed()
	}
	switch {
	case r.Partial():
		return ExitPartial
	case refused:
		return ExitRefused
	case changed:
		return ExitChanges
	}
	return ExitNoChanges
}

// Plan computes what the -f change does to every Cluster it reaches on every management cluster
// of the Env. It writes nothing: dry runs only, through clients that refuse writes.
func Plan(ctx context.Context, e env.Env, req PlanRequest) (*PlanResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	in, err := readInputs(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &PlanResult{Inputs: in.list}
	notes := map[string]bool{}
	for _, m := range e.Management {
		mc := multicluster.ManagementCluster{Name: m.Context}
		if m.Err != nil {
			mc.Error = m.Err.Error()
			res.ManagementClusters = append(res.ManagementClusters, mc)
			continue
		}
		mc.Reachable = true
		e.Step(fmt.Sprintf("Planning on %s", m.Context))
		plans, live, unused, err := planOn(ctx, m.Client, in, req)
		if err != nil {
			if !e.Several() {
				return nil, err
			}
			mc.Error = err.Error()
		}
		for i := range plans {
			if e.Several() {
				plans[i].ManagementCluster = m.Context
			}
		}
		for i := range live {
			if e.Several() {
				live[i].ManagementCluster = m.Context
			}
		}
		res.live = append(res.live, live...)
		res.Clusters = append(res.Clusters, plans...)
		for _, n := range unused {
			notes[n] = true
		}
		res.ManagementClusters = append(res.ManagementClusters, mc)
	}
	if !e.Several() {
		res.ManagementClusters = nil
	}
	for n := range notes {
		res.Notes = append(res.Notes, n)
	}
	sort.Strings(res.Notes)
	sort.SliceStable(res.Clusters, func(i, j int) bool {
		a, b := res.Clusters[i], res.Clusters[j]
		return multicluster.ComparePlace(a.ManagementCluster, a.Namespace, a.Name, b.ManagementCluster, b.Namespace, b.Name) < 0
	})
	if req.Save != "" {
		if err := savePlan(req.Save, res, in.all()); err != nil {
			return nil, err
		}
		res.SavedTo = req.Save
	}
	return res, nil
}

type nsName struct{ namespace, name string }

// planOn plans the change on one management cluster.
func planOn(ctx context.Context, c *cluster.Client, in *inputs, req PlanRequest) ([]ClusterPlan, []LiveObject, []string, error) {
	if err := contract.CheckManagementCluster(ctx, c); err != nil {
		return nil, nil, nil, err
	}
	live, err := client.New(c.Config, client.Options{Scheme: topologyengine.Scheme(), Mapper: c.Mapper})
	if err != nil {
		return nil, nil, nil, err
	}
	planned := withNamespace(in.all(), c.NamespaceOr(""))
	liveClusters := &clusterv1.ClusterList{}
	if err := live.List(ctx, liveClusters); err != nil {
		return nil, nil, nil, fmt.Errorf("listing Clusters: %w", err)
	}
	liveClasses := &clusterv1.ClusterClassList{}
	if err := live.List(ctx, liveClasses); err != nil {
		return nil, nil, nil, fmt.Errorf("listing ClusterClasses: %w", err)
	}
	plannedClusters, err := asAppliedClusters(planned, liveClusters)
	if err != nil {
		return nil, nil, nil, err
	}
	eng, err := topologyengine.New(ctx, live, replaceClusters(planned, plannedClusters))
	if err != nil {
		return nil, nil, nil, err
	}
	classes, err := effectiveClasses(planned, liveClasses)
	if err != nil {
		return nil, nil, nil, err
	}
	reached := reachedClasses(planned, classes)
	targets := affected(liveClusters, plannedClusters, reached)
	unused := unusedClasses(reached, targets)
	targets = selectClusters(targets, req)
	p := &planner{eng: eng, planned: plannedClusters, live: liveClusters, refusedByClass: admitClasses(ctx, eng, planned, liveClasses), diff: req.Diff}
	plans := make([]ClusterPlan, len(targets))
	var g errgroup.Group
	g.SetLimit(req.Concurrency)
	for i, cl := range targets {
		g.Go(func() error {
			plans[i] = p.cluster(ctx, cl)
			return nil
		})
	}
	_ = g.Wait()
	for i := range plans {
		plans[i].Normalize()
	}
	return plans, liveObjects(targets, liveClasses, reached), unused, nil
}

// liveObjects are the planned Clusters and the live classes the change reached, as read.
func liveObjects(targets []*clusterv1.Cluster, classes *clusterv1.ClusterClassList, reached map[nsName]bool) []LiveObject {
	out := []LiveObject{}
	for _, c := range targets {
		out = append(out, LiveObject{Kind: "Cluster", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID), Generation: c.Generation})
	}
	for i := range classes.Items {
		c := &classes.Items[i]
		if reached[nsName{c.Namespace, c.Name}] {
			out = append(out, LiveObject{Kind: "ClusterClass", Namespace: c.Namespace, Name: c.Name, UID: string(c.UID), Generation: c.Generation})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Kind+"/"+out[i].Namespace+"/"+out[i].Name < out[j].Kind+"/"+out[j].Namespace+"/"+out[j].Name
	})
	return out
}

func withNamespace(objs []*unstructured.Unstructured, ns string) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, u := range objs {
		u = u.DeepCopy()
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		out[i] = u
	}
	return out
}

// asAppliedClusters is each planned Cluster as the API server would hold it once applied: the
// live Cluster with the file's spec, labels and annotations (the references the topology
// controller set stay when the file leaves them out, as an apply would keep them).
func asAppliedClusters(planned []*unstructured.Unstructured, live *clusterv1.ClusterList) (map[nsName]*clusterv1.Cluster, error) {
	out := map[nsName]*clusterv1.Cluster{}
	for _, u := range planned {
		if u.GetKind() != "Cluster" {
			continue
		}
		p := &clusterv1.Cluster{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			return nil, fmt.Errorf("Cluster %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		if !p.Spec.Topology.IsDefined() {
			return nil, fmt.Errorf("Cluster %s/%s has no spec.topology: topology plan plans Clusters built from a ClusterClass", p.Namespace, p.Name)
		}
		k := nsName{p.Namespace, p.Name}
		i := slices.IndexFunc(live.Items, func(c clusterv1.Cluster) bool { return c.Namespace == k.namespace && c.Name == k.name })
		if i < 0 {
			out[k] = p
			continue
		}
		cur := live.Items[i].DeepCopy()
		spec := p.Spec
		if !spec.InfrastructureRef.IsDefined() {
			spec.InfrastructureRef = cur.Spec.InfrastructureRef
		}
		if !spec.ControlPlaneRef.IsDefined() {
			spec.ControlPlaneRef = cur.Spec.ControlPlaneRef
		}
		if !spec.ControlPlaneEndpoint.IsValid() {
			spec.ControlPlaneEndpoint = cur.Spec.ControlPlaneEndpoint
		}
		cur.Spec = spec
		cur.Labels = merge(cur.Labels, p.Labels)
		cur.Annotations = merge(cur.Annotations, p.Annotations)
		out[k] = cur
	}
	return out, nil
}

func merge(a, b map[string]string) map[string]string {
	if len(b) == 0 {
		return a
	}
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func replaceClusters(planned []*unstructured.Unstructured, applied map[nsName]*clusterv1.Cluster) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range planned {
		if u.GetKind() == "Cluster" {
			continue
		}
		out = append(out, u)
	}
	keys := make([]nsName, 0, len(applied))
	for k := range applied {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].namespace+"/"+keys[i].name < keys[j].namespace+"/"+keys[j].name })
	for _, k := range keys {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(applied[k])
		if err != nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(clusterv1.GroupVersion.WithKind("Cluster"))
		out = append(out, u)
	}
	return out
}

// effectiveClasses are the classes as they will be: the live ones with the planned ones over them.
func effectiveClasses(planned []*unstructured.Unstructured, live *clusterv1.ClusterClassList) (map[nsName]*clusterv1.ClusterClass, error) {
	out := map[nsName]*clusterv1.ClusterClass{}
	for i := range live.Items {
		c := &live.Items[i]
		out[nsName{c.Namespace, c.Name}] = c
	}
	for _, u := range planned {
		if u.GetKind() != "ClusterClass" {
			continue
		}
		c := &clusterv1.ClusterClass{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
			return nil, fmt.Errorf("ClusterClass %s/%s: %w", u.GetNamespace(), u.GetName(), err)
		}
		out[nsName{c.Namespace, c.Name}] = c
	}
	return out, nil
}

// reachedClasses are the classes the change reaches: the planned ones, and those referencing a
// planned template.
func reachedClasses(planned []*unstructured.Unstructured, classes map[nsName]*clusterv1.ClusterClass) map[nsName]bool {
	reached := map[nsName]bool{}
	templates := map[string]bool{}
	for _, u := range planned {
		switch u.GetKind() {
		case "ClusterClass":
			reached[nsName{u.GetNamespace(), u.GetName()}] = true
		case "Cluster":
		default:
			templates[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = true
		}
	}
	for k, c := range classes {
		for _, ref := range templateRefs(c) {
			if templates[ref.Kind+"/"+c.Namespace+"/"+ref.Name] {
				reached[k] = true
			}
		}
	}
	return reached
}

func templateRefs(c *clusterv1.ClusterClass) []clusterv1.ClusterClassTemplateReference {
	refs := []clusterv1.ClusterClassTemplateReference{c.Spec.Infrastructure.TemplateRef, c.Spec.ControlPlane.TemplateRef, c.Spec.ControlPlane.MachineInfrastructure.TemplateRef}
	for _, md := range c.Spec.Workers.MachineDeployments {
		refs = append(refs, md.Infrastructure.TemplateRef, md.Bootstrap.TemplateRef)
	}
	for _, mp := range c.Spec.Workers.MachinePools {
		refs = append(refs, mp.Infrastructure.TemplateRef, mp.Bootstrap.TemplateRef)
	}
	return refs
}

// affected are the Clusters (as they will be) whose class the change reaches, and the planned
// Clusters.
func affected(live *clusterv1.ClusterList, planned map[nsName]*clusterv1.Cluster, reached map[nsName]bool) []*clusterv1.Cluster {
	var out []*clusterv1.Cluster
	for i := range live.Items {
		c := &live.Items[i]
		if p, ok := planned[nsName{c.Namespace, c.Name}]; ok {
			out = append(out, p)
			continue
		}
		if !c.Spec.Topology.IsDefined() {
			continue
		}
		k := c.GetClassKey()
		if reached[nsName{k.Namespace, k.Name}] {
			out = append(out, c)
		}
	}
	for k, p := range planned {
		if !slices.ContainsFunc(live.Items, func(c clusterv1.Cluster) bool { return c.Namespace == k.namespace && c.Name == k.name }) {
			out = append(out, p)
		}
	}
	return out
}

func unusedClasses(reached map[nsName]bool, targets []*clusterv1.Cluster) []string {
	used := map[nsName]bool{}
	for _, c := range targets {
		k := c.GetClassKey()
		used[nsName{k.Namespace, k.Name}] = true
	}
	var out []string
	for k := range reached {
		if !used[k] {
			out = append(out, fmt.Sprintf("no cluster uses ClusterClass %s/%s", k.namespace, k.name))
		}
	}
	return out
}

func selectClusters(cs []*clusterv1.Cluster, req PlanRequest) []*clusterv1.Cluster {
	sel, _ := labels.Parse(req.Selector) // Validate parsed it
	var out []*clusterv1.Cluster
	for _, c := range cs {
		if req.Namespace != "" && c.Namespace != req.Namespace {
			continue
		}
		if len(req.Clusters) > 0 && !slices.Contains(req.Clusters, c.Name) {
			continue
		}
		if !sel.Matches(labels.Set(c.Labels)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// admitClasses runs upstream's ClusterClass admission on every planned class; what it refuses
// refuses the plan of every cluster using that class.
func admitClasses(ctx context.Context, eng *topologyengine.Engine, planned []*unstructured.Unstructured, live *clusterv1.ClusterClassList) map[nsName]string {
	out := map[nsName]string{}
	for _, u := range planned {
		if u.GetKind() != "ClusterClass" {
			continue
		}
		p := &clusterv1.ClusterClass{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			out[nsName{u.GetNamespace(), u.GetName()}] = err.Error()
			continue
		}
		var cur *clusterv1.ClusterClass
		for i := range live.Items {
			if live.Items[i].Namespace == p.Namespace && live.Items[i].Name == p.Name {
				cur = &live.Items[i]
			}
		}
		if err := eng.AdmitClass(ctx, cur, p); err != nil {
			out[nsName{p.Namespace, p.Name}] = err.Error()
		}
	}
	return out
}

// planner plans the clusters of one management cluster.
type planner struct {
	eng     *topologyengine.Engine
	planned map[nsName]*clusterv1.Cluster
	live    *clusterv1.ClusterList
	// refusedByClass is upstream admission's answer per planned class it refuses.
	refusedByClass map[nsName]string
	diff           bool
}

func (pl *planner) cluster(ctx context.Context, cl *clusterv1.Cluster) ClusterPlan {
	k := cl.GetClassKey()
	p := ClusterPlan{Namespace: cl.Namespace, Name: cl.Name, Class: k.Name}
	if why, ok := pl.refusedByClass[nsName{k.Namespace, k.Name}]; ok {
		p.Refused = why
		return p
	}
	if _, ok := pl.planned[nsName{cl.Namespace, cl.Name}]; ok {
		var cur *clusterv1.Cluster
		for i := range pl.live.Items {
			if pl.live.Items[i].Namespace == cl.Namespace && pl.live.Items[i].Name == cl.Name {
				cur = &pl.live.Items[i]
			}
		}
		admitted, err := pl.eng.AdmitCluster(ctx, cur, cl)
		if err != nil {
			p.Refused = err.Error()
			return p
		}
		cl = admitted
	}
	out, err := pl.eng.Plan(ctx, cl)
	var refused *topologyengine.RefusedError
	switch {
	case errors.As(err, &refused):
		p.Refused = refused.Error()
	case err != nil:
		p.Partial = "not computed: " + err.Error()
	default:
		p.Outcome = *out
		if !pl.diff {
			for i := range p.Changes {
				p.Changes[i].Diff = ""
			}
		}
	}
	return p
}
