package describe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Labels and groups describe relies on (Cluster API's own names).
const (
	coreGroup         = "cluster.x-k8s.io"
	addonsGroup       = "addons.cluster.x-k8s.io"
	clusterNameLabel  = "cluster.x-k8s.io/cluster-name"
	controlPlaneLabel = "cluster.x-k8s.io/control-plane"
	pausedAnnotation  = "cluster.x-k8s.io/paused"
	contractLabelV1b2 = "cluster.x-k8s.io/v1beta2"
	contractLabelV1b1 = "cluster.x-k8s.io/v1beta1"
	crdGroup          = "apiextensions.k8s.io"
	// unlabelledListThreshold: when more referenced objects of one kind than this are missing from
	// the labelled list, list the kind in the namespace once instead of reading each one.
	unlabelledListThreshold = 10
)

// Options select the cluster and what the tree shows (the describe cluster flags).
type Options struct {
	Namespace string
	Name      string
	// ShowConditions: comma list of all, KIND or KIND/NAME, each optionally ending in "+".
	ShowConditions   string
	ShowMachineSets  bool
	ShowTemplates    bool
	ShowResourceSets bool
	Echo             bool
	Grouping         bool
	// V1Beta1 builds the tree for the deprecated v1beta1 presentation (--v1beta2=false).
	V1Beta1 bool
}

// Reader is what describe needs from a management-cluster connection (*cluster.Client has it).
type Reader interface {
	client.Reader
	RESTMapper() meta.RESTMapper
}

// ClusterNotFoundError says a cluster does not exist and which ones do in that namespace.
type ClusterNotFoundError struct {
	Namespace, Name string
	Existing        []string
}

func (e *ClusterNotFoundError) Error() string {
	if len(e.Existing) == 0 {
		return fmt.Sprintf("cluster %q not found in namespace %q, which has no clusters (try `capctl describe clusters -A`)", e.Name, e.Namespace)
	}
	return fmt.Sprintf("cluster %q not found in namespace %q; clusters there: %s", e.Name, e.Namespace, strings.Join(e.Existing, ", "))
}

// NamespaceNotFoundError says the namespace itself does not exist.
type NamespaceNotFoundError struct{ Namespace string }

func (e *NamespaceNotFoundError) Error() string {
	return fmt.Sprintf("namespace %q not found (check -n/--namespace or the kubeconfig context's namespace)", e.Namespace)
}

// ErrCAPINotInstalled is returned when the management cluster serves no Cluster kind.
var ErrCAPINotInstalled = errors.New("Cluster API is not installed in this management cluster (no clusters.cluster.x-k8s.io CRD): run `capctl init` first, or check --kubeconfig/--kubeconfig-context")

type discoverer struct {
	c    Reader
	opts Options

	mu       sync.Mutex
	versions map[schema.GroupKind]versionResult
}

type versionResult struct {
	gvk schema.GroupVersionKind
	err error
}

// servedGVK is the preferred served version of a kind; ok is false when the kind is not served.
func (d *discoverer) servedGVK(group, kind string) (schema.GroupVersionKind, bool, error) {
	m, err := d.c.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind})
	if err != nil {
		if meta.IsNoMatchError(err) {
			return schema.GroupVersionKind{}, false, nil
		}
		return schema.GroupVersionKind{}, false, fmt.Errorf("looking up the %s kind %s: %w", group, kind, err)
	}
	return m.GroupVersionKind, true, nil
}

// resolve turns a reference into a full kind. v1beta1 references carry their version; v1beta2
// ones are resolved, as Cluster API does, through the CRD's contract label
// (cluster.x-k8s.io/v1beta2: "v1beta1_v1beta2" → the newest listed). A CRD without the label falls
// back to the version the API server prefers.
func (d *discoverer) resolve(ctx context.Context, r ref) (schema.GroupVersionKind, error) {
	if r.Version != "" {
		return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}, nil
	}
	gk := r.gk()
	d.mu.Lock()
	res, ok := d.versions[gk]
	d.mu.Unlock()
	if ok {
		return res.gvk, res.err
	}
	res = d.resolveUncached(ctx, gk)
	d.mu.Lock()
	d.versions[gk] = res
	d.mu.Unlock()
	return res.gvk, res.err
}

func (d *discoverer) resolveUncached(ctx context.Context, gk schema.GroupKind) versionResult {
	m, err := d.c.RESTMapper().RESTMapping(gk)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return versionResult{err: fmt.Errorf("kind %s is not served by the management cluster (is its provider installed?)", gk)}
		}
		return versionResult{err: fmt.Errorf("looking up kind %s: %w", gk, err)}
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: crdGroup, Version: "v1", Kind: "CustomResourceDefinition"})
	if err := d.c.Get(ctx, client.ObjectKey{Name: m.Resource.Resource + "." + gk.Group}, crd); err == nil {
		for _, key := range []string{contractLabelV1b2, contractLabelV1b1} {
			if v := latestVersion(crd.GetLabels()[key]); v != "" {
				return versionResult{gvk: gk.WithVersion(v)}
			}
		}
	}
	return versionResult{gvk: m.GroupVersionKind}
}

// latestVersion picks the newest of "_"-separated Kubernetes API versions.
func latestVersion(list string) string {
	best := ""
	for _, v := range strings.Split(list, "_") {
		if v == "" {
			continue
		}
		if best == "" || version.CompareKubeAwareVersionStrings(v, best) > 0 {
			best = v
		}
	}
	return best
}

// list lists a served kind in a namespace; an unserved kind is an empty list.
func (d *discoverer) list(ctx context.Context, group, kind, namespace string, sel map[string]string) ([]unstructured.Unstructured, error) {
	gvk, ok, err := d.servedGVK(group, kind)
	if err != nil || !ok {
		return nil, err
	}
	return d.listGVK(ctx, gvk, namespace, sel)
}

func (d *discoverer) listGVK(ctx context.Context, gvk schema.GroupVersionKind, namespace string, sel map[string]string) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(namespace)}
	if sel != nil {
		opts = append(opts, client.MatchingLabels(sel))
	}
	if err := d.c.List(ctx, l, opts...); err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", gvk.Kind, namespace, err)
	}
	sort.SliceStable(l.Items, func(i, j int) bool { return l.Items[i].GetName() < l.Items[j].GetName() })
	return l.Items, nil
}

type objKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func keyOf(r ref) objKey { return objKey{gk: r.gk(), namespace: r.Namespace, name: r.Name} }

type fetched struct {
	obj *unstructured.Unstructured
	err error
}

// fetchSingles reads a few referenced objects, one GET each, concurrently.
func (d *discoverer) fetchSingles(ctx context.Context, refs []ref, out map[objKey]fetched, mu *sync.Mutex) {
	var wg sync.WaitGroup
	for _, r := range refs {
		if !r.defined() {
			continue
		}
		wg.Add(1)
		go func(r ref) {
			defer wg.Done()
			obj, err := d.get(ctx, r)
			mu.Lock()
			out[keyOf(r)] = fetched{obj: obj, err: err}
			mu.Unlock()
		}(r)
	}
	wg.Wait()
}

func (d *discoverer) get(ctx context.Context, r ref) (*unstructured.Unstructured, error) {
	gvk, err := d.resolve(ctx, r)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s %s/%s not found", r.Kind, r.Namespace, r.Name)
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	return u, nil
}

// fetchBulk reads many referenced objects (machine infrastructure and bootstrap configs) with one
// labelled LIST per kind and namespace. Objects the labelled list misses are read one by one when
// few, or by one unlabelled LIST of the namespace when many, so the number of requests does not
// grow with the number of machines.
func (d *discoverer) fetchBulk(ctx context.Context, refs []ref, out map[objKey]fetched, mu *sync.Mutex) {
	type bucketKey struct {
		gk        schema.GroupKind
		version   string
		namespace string
	}
	buckets := map[bucketKey][]ref{}
	for _, r := range refs {
		if !r.defined() {
			continue
		}
		k := bucketKey{gk: r.gk(), version: r.Version, namespace: r.Namespace}
		buckets[k] = append(buckets[k], r)
	}
	var wg sync.WaitGroup
	for k, rs := range buckets {
		wg.Add(1)
		go func(k bucketKey, rs []ref) {
			defer wg.Done()
			set := func(r ref, f fetched) {
				mu.Lock()
				out[keyOf(r)] = f
				mu.Unlock()
			}
			gvk, err := d.resolve(ctx, rs[0])
			if err != nil {
				for _, r := range rs {
					set(r, fetched{err: err})
				}
				return
			}
			if len(rs) == 1 {
				obj, err := d.get(ctx, rs[0])
				set(rs[0], fetched{obj: obj, err: err})
				return
			}
			byName := map[string]*unstructured.Unstructured{}
			index := func(items []unstructured.Unstructured) {
				for i := range items {
					byName[items[i].GetName()] = &items[i]
				}
			}
			items, err := d.listGVK(ctx, gvk, k.namespace, map[string]string{clusterNameLabel: d.opts.Name})
			if err != nil {
				for _, r := range rs {
					set(r, fetched{err: err})
				}
				return
			}
			index(items)
			var missing []ref
			for _, r := range rs {
				if o, ok := byName[r.Name]; ok {
					set(r, fetched{obj: o})
				} else {
					missing = append(missing, r)
				}
			}
			if len(missing) > unlabelledListThreshold {
				all, err := d.listGVK(ctx, gvk, k.namespace, nil)
				if err == nil {
					index(all)
				}
				for _, r := range missing {
					if o, ok := byName[r.Name]; ok {
						set(r, fetched{obj: o})
					} else if err != nil {
						set(r, fetched{err: err})
					} else {
						set(r, fetched{err: fmt.Errorf("%s %s/%s not found", r.Kind, r.Namespace, r.Name)})
					}
				}
				return
			}
			for _, r := range missing {
				obj, err := d.get(ctx, r)
				set(r, fetched{obj: obj, err: err})
			}
		}(k, rs)
	}
	wg.Wait()
}

// Discover reads a cluster and the objects around it and builds its tree. It lists each kind once
// per namespace (by the cluster-name label) and resolves references in memory.
func Discover(ctx context.Context, c Reader, opts Options) (*Tree, error) {
	d := &discoverer{c: c, opts: opts, versions: map[schema.GroupKind]versionResult{}}
	clusterGVK, ok, err := d.servedGVK(coreGroup, "Cluster")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrCAPINotInstalled
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(clusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, cl); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, d.notFound(ctx, clusterGVK)
		}
		return nil, fmt.Errorf("reading cluster %s/%s: %w", opts.Namespace, opts.Name, err)
	}

	// All lists at once: they do not depend on each other.
	sel := map[string]string{clusterNameLabel: opts.Name}
	var machines, mds, mss, mps, mhcs, crss []unstructured.Unstructured
	var binding *unstructured.Unstructured
	g, gctx := errgroup.WithContext(ctx)
	listInto := func(dst *[]unstructured.Unstructured, group, kind string, sel map[string]string) {
		g.Go(func() error {
			items, err := d.list(gctx, group, kind, opts.Namespace, sel)
			*dst = items
			return err
		})
	}
	listInto(&machines, coreGroup, "Machine", sel)
	listInto(&mds, coreGroup, "MachineDeployment", sel)
	listInto(&mss, coreGroup, "MachineSet", sel)
	listInto(&mps, coreGroup, "MachinePool", sel)
	listInto(&mhcs, coreGroup, "MachineHealthCheck", nil)
	if opts.ShowResourceSets {
		listInto(&crss, addonsGroup, "ClusterResourceSet", nil)
		g.Go(func() error {
			gvk, ok, err := d.servedGVK(addonsGroup, "ClusterResourceSetBinding")
			if err != nil || !ok {
				return err
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := c.Get(gctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, u); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				return fmt.Errorf("reading ClusterResourceSetBinding %s/%s: %w", opts.Namespace, opts.Name, err)
			}
			binding = u
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// Referenced objects: the two singletons by GET, machine and pool objects in bulk.
	ns := cl.GetNamespace()
	infraRef := readRef(cl.Object, ns, "spec", "infrastructureRef")
	cpRef := readRef(cl.Object, ns, "spec", "controlPlaneRef")
	var bulk []ref
	for i := range machines {
		m := machines[i].Object
		bulk = append(bulk, readRef(m, ns, "spec", "infrastructureRef"), readRef(m, ns, "spec", "bootstrap", "configRef"))
	}
	for i := range mps {
		m := mps[i].Object
		bulk = append(bulk, readRef(m, ns, "spec", "template", "spec", "infrastructureRef"), readRef(m, ns, "spec", "template", "spec", "bootstrap", "configRef"))
	}
	objs := map[objKey]fetched{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); d.fetchSingles(ctx, []ref{infraRef, cpRef}, objs, &mu) }()
	go func() { defer wg.Done(); d.fetchBulk(ctx, bulk, objs, &mu) }()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	t := &Tree{V1Beta1: opts.V1Beta1, ServedVersion: clusterGVK.Version}
	b := &builder{opts: opts}
	root := objectNode(cl, CategoryCluster, "")
	root.showConditions = matchShowConditions(root.Kind, root.Name, opts.ShowConditions)
	t.Root = root

	refNode := func(r ref, cat Category, role string) *Node {
		f, ok := objs[keyOf(r)]
		if ok && f.obj != nil {
			return objectNode(f.obj, cat, role)
		}
		n := &Node{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Category: cat, Role: role, Missing: true}
		if r.Group != "" {
			n.APIVersion = schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
		}
		if ok && f.err != nil {
			n.Error = f.err.Error()
		} else {
			n.Error = "not found"
		}
		return n
	}

	if infraRef.defined() {
		b.add(root, refNode(infraRef, CategoryObject, "ClusterInfrastructure"))
	}

	if opts.ShowResourceSets && binding != nil {
		crsByName := map[string]*unstructured.Unstructured{}
		for i := range crss {
			crsByName[crss[i].GetName()] = &crss[i]
		}
		group := &Node{Kind: "ClusterResourceSetGroup", Namespace: ns, Name: "ClusterResourceSets", Category: CategoryVirtual}
		b.add(root, group)
		bindings, _ := nestedSlice(binding.Object, "spec", "bindings")
		for _, it := range bindings {
			m, _ := it.(map[string]any)
			name := str(m["clusterResourceSetName"])
			if name == "" {
				continue
			}
			var n *Node
			if o, ok := crsByName[name]; ok {
				n = objectNode(o, CategoryObject, "ClusterResourceSet")
			} else {
				n = &Node{Kind: "ClusterResourceSet", Namespace: ns, Name: name, Category: CategoryReference, Missing: true, Error: "not found"}
			}
			b.add(group, n)
		}
	}

	placed := map[string]bool{}
	var addMachine func(parent *Node, m *unstructured.Unstructured)
	addMachine = func(parent *Node, m *unstructured.Unstructured) {
		placed[m.GetName()] = true
		n := objectNode(m, CategoryMachine, "")
		if !b.add(parent, n) {
			return
		}
		if r := readRef(m.Object, ns, "spec", "infrastructureRef"); r.defined() {
			in := refNode(r, CategoryObject, "MachineInfrastructure")
			in.noEcho = true
			b.add(n, in)
		}
		if r := readRef(m.Object, ns, "spec", "bootstrap", "configRef"); r.defined() {
			bn := refNode(r, CategoryObject, "BootstrapConfig")
			bn.noEcho = true
			b.add(n, bn)
		}
	}
	templates := func(parent *Node, refs map[string]ref) {
		if !opts.ShowTemplates {
			return
		}
		var tn *Node
		for _, role := range []string{"BootstrapConfigTemplate", "MachineInfrastructureTemplate"} {
			r, ok := refs[role]
			if !ok || !r.defined() {
				continue
			}
			if tn == nil {
				tn = &Node{Kind: "TemplateGroup", Namespace: ns, Name: "Templates", Category: CategoryVirtual, zOrder: 1}
				b.add(parent, tn)
			}
			n := &Node{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Category: CategoryReference, Role: role}
			if r.Group != "" {
				n.APIVersion = schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
			}
			b.add(tn, n)
		}
	}

	var cpNode *Node
	if cpRef.defined() {
		cpNode = refNode(cpRef, CategoryControlPlane, "ControlPlane")
		cpNode.groupingParent = true
		b.add(root, cpNode)
		if f := objs[keyOf(cpRef)]; f.obj != nil {
			r := readRef(f.obj.Object, ns, "spec", "machineTemplate", "spec", "infrastructureRef")
			if !r.defined() {
				r = readRef(f.obj.Object, ns, "spec", "machineTemplate", "infrastructureRef")
			}
			templates(cpNode, map[string]ref{"MachineInfrastructureTemplate": r})
		}
	}
	if cpNode != nil {
		for i := range machines {
			if _, ok := machines[i].GetLabels()[controlPlaneLabel]; ok {
				addMachine(cpNode, &machines[i])
			}
		}
	}

	workers := &Node{Kind: "WorkerGroup", Namespace: ns, Name: "Workers", Category: CategoryVirtual}
	workersAdded := false
	addWorkers := func() {
		if !workersAdded {
			b.add(root, workers)
			workersAdded = true
		}
	}
	for i := range mds {
		md := &mds[i]
		addWorkers()
		mdNode := objectNode(md, CategoryMachineDeployment, "")
		mdNode.groupingParent = !opts.ShowMachineSets
		b.add(workers, mdNode)
		templates(mdNode, map[string]ref{
			"BootstrapConfigTemplate":       readRef(md.Object, ns, "spec", "template", "spec", "bootstrap", "configRef"),
			"MachineInfrastructureTemplate": readRef(md.Object, ns, "spec", "template", "spec", "infrastructureRef"),
		})
		for j := range mss {
			ms := &mss[j]
			if !controlledBy(ms, coreGroup, "MachineDeployment", md.GetName()) {
				continue
			}
			parent := mdNode
			if opts.ShowMachineSets {
				msNode := objectNode(ms, CategoryMachineSet, "")
				msNode.groupingParent = true
				b.add(mdNode, msNode)
				parent = msNode
			}
			for k := range machines {
				m := &machines[k]
				if !placed[m.GetName()] && controlledBy(m, coreGroup, "MachineSet", ms.GetName()) {
					addMachine(parent, m)
				}
			}
		}
	}
	for i := range mps {
		mp := &mps[i]
		addWorkers()
		mpNode := objectNode(mp, CategoryMachinePool, "")
		mpNode.groupingParent = true
		if b.add(workers, mpNode) {
			if r := readRef(mp.Object, ns, "spec", "template", "spec", "bootstrap", "configRef"); r.defined() {
				n := refNode(r, CategoryObject, "BootstrapConfig")
				n.noEcho = true
				b.add(mpNode, n)
			}
			if r := readRef(mp.Object, ns, "spec", "template", "spec", "infrastructureRef"); r.defined() {
				n := refNode(r, CategoryObject, "MachinePoolInfrastructure")
				n.noEcho = true
				b.add(mpNode, n)
			}
		}
		for k := range machines {
			m := &machines[k]
			if !placed[m.GetName()] && controlledBy(m, coreGroup, "MachinePool", mp.GetName()) {
				addMachine(mpNode, m)
			}
		}
	}
	if len(placed) < len(machines) {
		addWorkers()
		other := &Node{Kind: "OtherGroup", Namespace: ns, Name: "Other", Category: CategoryVirtual}
		b.add(workers, other)
		for i := range machines {
			if !placed[machines[i].GetName()] {
				addMachine(other, &machines[i])
			}
		}
	}

	d.addHealthChecks(b, root, mhcs, machines)

	sortTree(root)
	root.FirstFailing = findFirstFailing(root, opts.V1Beta1)
	return t, nil
}

// addHealthChecks adds the MachineHealthChecks of the cluster, with the machines each selects and
// which of those it sees as unhealthy (HealthCheckSucceeded=False).
func (d *discoverer) addHealthChecks(b *builder, root *Node, mhcs, machines []unstructured.Unstructured) {
	var nodes []*Node
	for i := range mhcs {
		mhc := &mhcs[i]
		if nestedString(mhc.Object, "spec", "clusterName") != d.opts.Name {
			continue
		}
		n := objectNode(mhc, CategoryHealthCheck, "")
		hc := &HealthCheck{
			ExpectedMachines: nestedInt(mhc.Object, "status", "expectedMachines"),
			CurrentHealthy:   nestedInt(mhc.Object, "status", "currentHealthy"),
		}
		selector := labels.Nothing()
		if sm, ok := nestedMap(mhc.Object, "spec", "selector"); ok {
			ls := &metav1.LabelSelector{}
			if err := runtimeConvert(sm, ls); err == nil {
				if s, err := metav1.LabelSelectorAsSelector(ls); err == nil {
					selector = s
				}
			}
		}
		for j := range machines {
			m := &machines[j]
			if !selector.Matches(labels.Set(m.GetLabels())) {
				continue
			}
			hc.Selected++
			c := findCondition(v1beta2Conditions(m), "HealthCheckSucceeded")
			if c == nil {
				c = findCondition(v1beta1Conditions(m), "HealthCheckSucceeded")
			}
			if c != nil && c.Status == "False" {
				hc.Unhealthy = append(hc.Unhealthy, m.GetName())
			}
		}
		n.HealthCheck = hc
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return
	}
	group := &Node{Kind: "MachineHealthCheckGroup", Namespace: root.Namespace, Name: "MachineHealthChecks", Category: CategoryVirtual, zOrder: -1}
	b.add(root, group)
	for _, n := range nodes {
		b.add(group, n)
	}
}

// notFound explains a missing cluster: a missing namespace, or the clusters that do exist there.
func (d *discoverer) notFound(ctx context.Context, clusterGVK schema.GroupVersionKind) error {
	nsObj := &corev1.Namespace{}
	if err := d.c.Get(ctx, client.ObjectKey{Name: d.opts.Namespace}, nsObj); apierrors.IsNotFound(err) {
		return &NamespaceNotFoundError{Namespace: d.opts.Namespace}
	}
	items, err := d.listGVK(ctx, clusterGVK, d.opts.Namespace, nil)
	e := &ClusterNotFoundError{Namespace: d.opts.Namespace, Name: d.opts.Name}
	if err == nil {
		for _, it := range items {
			e.Existing = append(e.Existing, it.GetName())
		}
	}
	return e
}

// objectNode builds a row from an object: conditions of both generations, version, counters.
func objectNode(u *unstructured.Unstructured, cat Category, role string) *Node {
	n := &Node{
		Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Namespace: u.GetNamespace(), Name: u.GetName(),
		Category: cat, Role: role,
		Deleting:          u.GetDeletionTimestamp() != nil,
		Conditions:        v1beta2Conditions(u),
		V1Beta1Conditions: v1beta1Conditions(u),
		labels:            u.GetLabels(),
	}
	o := u.Object
	legacy := isLegacyVersion(u.GetAPIVersion())
	// counter reads status.v1beta2.<f> on v1beta1 objects (where the new counters live), else status.<f>.
	counter := func(f string, v1beta1Fallback string) *int32 {
		if legacy {
			if v := nestedInt(o, "status", "v1beta2", f); v != nil {
				return v
			}
			if v1beta1Fallback != "" {
				return nestedInt(o, "status", v1beta1Fallback)
			}
			return nil
		}
		return nestedInt(o, "status", f)
	}
	switch cat {
	case CategoryCluster:
		n.Version = nestedString(o, "spec", "topology", "version")
		n.Topology = nestedString(o, "spec", "topology", "classRef", "name")
		if n.Topology == "" {
			n.Topology = nestedString(o, "spec", "topology", "class")
		}
		_, pausedAnn := u.GetAnnotations()[pausedAnnotation]
		n.Paused = nestedBool(o, "spec", "paused") || pausedAnn
		base := []string{"status"}
		if legacy {
			base = []string{"status", "v1beta2"}
		}
		sum := func(f string) *int32 {
			cp := nestedInt(o, append(append([]string{}, base...), "controlPlane", f)...)
			w := nestedInt(o, append(append([]string{}, base...), "workers", f)...)
			if cp == nil && w == nil {
				return nil
			}
			var s int32
			if cp != nil {
				s += *cp
			}
			if w != nil {
				s += *w
			}
			return &s
		}
		r := &Replicas{Available: sum("availableReplicas"), Ready: sum("readyReplicas"), UpToDate: sum("upToDateReplicas")}
		cur, des := sum("replicas"), sum("desiredReplicas")
		if cur != nil || des != nil {
			r.Current, r.Desired = orZero(cur), orZero(des)
		}
		n.Replicas = r
	case CategoryControlPlane:
		n.Version = nestedString(o, "spec", "version")
		r := &Replicas{
			Available: counter("availableReplicas", ""),
			Ready:     counter("readyReplicas", "readyReplicas"),
			UpToDate:  counter("upToDateReplicas", "updatedReplicas"),
		}
		if cur, des := nestedInt(o, "status", "replicas"), nestedInt(o, "spec", "replicas"); cur != nil && des != nil {
			r.Current, r.Desired = cur, des
		}
		n.Replicas = r
	case CategoryMachineDeployment, CategoryMachineSet, CategoryMachinePool:
		n.Version = nestedString(o, "spec", "template", "spec", "version")
		r := &Replicas{
			Available: counter("availableReplicas", ""),
			Ready:     counter("readyReplicas", ""),
			UpToDate:  counter("upToDateReplicas", ""),
		}
		if des := nestedInt(o, "spec", "replicas"); des != nil {
			r.Current, r.Desired = orZero(nestedInt(o, "status", "replicas")), des
		}
		n.Replicas = r
	case CategoryMachine:
		n.Version = nestedString(o, "spec", "version")
	}
	return n
}

func orZero(v *int32) *int32 {
	if v == nil {
		var z int32
		return &z
	}
	return v
}

func runtimeConvert(in map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(in, out)
}
