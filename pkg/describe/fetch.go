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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
)

// Labels and groups describe relies on (Cluster API's own names).
const (
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
	// visibleGetThreshold: when grouping folds machines away, the objects of the machines left
	// visible are read by GET (concurrently) up to this many per kind and namespace, rather than
	// by a LIST of every machine's object of that kind.
	visibleGetThreshold = 10
)

// ClusterRequest select the cluster and what the tree shows (the describe cluster flags).
type ClusterRequest struct {
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

// Validate checks the request before any cluster is contacted: the cluster's name and namespace
// (cluster.CheckClusterRef) and --show-conditions.
func (o ClusterRequest) Validate() error {
	if err := cluster.CheckClusterRef(o.Name, o.Namespace); err != nil {
		return err
	}
	return ValidateShowConditions(o.ShowConditions)
}

// Reader is what describe needs from a management-cluster connection (*cluster.Client has it).
type Reader interface {
	client.Reader
	RESTMapper() meta.RESTMapper
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
	opts ClusterRequest

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
	items, err := d.listItems(ctx, gvk, namespace, sel)
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", gvk.Kind, namespace, err)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	return items, nil
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
			return nil, notFoundRef(r)
		}
		return nil, fmt.Errorf("reading %s %s/%s: %w", r.Kind, r.Namespace, r.Name, err)
	}
	u.SetManagedFields(nil) // as listed objects: nothing reads them
	return u, nil
}

// notFoundRef is why a referenced object is missing when the API server does not have it.
func notFoundRef(r ref) error { return fmt.Errorf("%s %s/%s not found", r.Kind, r.Namespace, r.Name) }

// fetchBulk reads many referenced objects (machine infrastructure and bootstrap configs) with one
// labelled LIST per kind and namespace. Objects the labelled list misses are read one by one when
// few, or by one unlabelled LIST of the namespace when many, so the number of requests does not
// grow with the number of machines. With preferGets (only some machines' objects are wanted), a
// kind with at most visibleGetThreshold wanted objects is read by GETs instead.
func (d *discoverer) fetchBulk(ctx context.Context, refs []ref, preferGets bool, out map[objKey]fetched, mu *sync.Mutex) {
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
			if len(rs) == 1 || (preferGets && len(rs) <= visibleGetThreshold) {
				var wg sync.WaitGroup
				for _, r := range rs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						obj, err := d.get(ctx, r)
						set(r, fetched{obj: obj, err: err})
					}()
				}
				wg.Wait()
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
						set(r, fetched{err: notFoundRef(r)})
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

// Snapshot is everything describe reads of one cluster: the Cluster, the lists of its kinds and
// the objects they reference, each without metadata.managedFields. Fetch reads it with a number
// of requests that does not grow with the number of machines (up to a page of listPageSize
// objects per kind); Build turns it into a tree without any further request.
type Snapshot struct {
	// ServedVersion is the cluster.x-k8s.io version the objects were read at.
	ServedVersion string                     `json:"servedVersion"`
	Cluster       *unstructured.Unstructured `json:"cluster"`
	// The cluster's objects, each list sorted by name (MachineHealthChecks and
	// ClusterResourceSets are those of the namespace).
	Machines            []unstructured.Unstructured `json:"machines,omitempty"`
	MachineDeployments  []unstructured.Unstructured `json:"machineDeployments,omitempty"`
	MachineSets         []unstructured.Unstructured `json:"machineSets,omitempty"`
	MachinePools        []unstructured.Unstructured `json:"machinePools,omitempty"`
	MachineHealthChecks []unstructured.Unstructured `json:"machineHealthChecks,omitempty"`
	// ClusterResourceSets and the binding are read with ShowResourceSets only.
	ClusterResourceSets       []unstructured.Unstructured `json:"clusterResourceSets,omitempty"`
	ClusterResourceSetBinding *unstructured.Unstructured  `json:"clusterResourceSetBinding,omitempty"`
	// Unread are the kinds that could not be listed (their part of the tree is missing).
	Unread []authz.Unreadable `json:"unread,omitempty"`
	// Referenced are the objects the Cluster, machines and pools reference (infrastructure,
	// control plane, bootstrap configs), each with why it could not be read when it could not.
	// Fetched with ClusterRequest.Grouping, it holds those of the machines that stay rows of the tree
	// only (grouping folds the others into one row, which shows none of their objects).
	Referenced []Referenced `json:"referenced,omitempty"`
}

// Referenced is one referenced object, or the reason it could not be read.
type Referenced struct {
	Group     string                     `json:"group,omitempty"`
	Kind      string                     `json:"kind"`
	Namespace string                     `json:"namespace"`
	Name      string                     `json:"name"`
	Object    *unstructured.Unstructured `json:"object,omitempty"`
	Error     string                     `json:"error,omitempty"`
}

// Fetch reads a cluster and the objects around it. It lists each kind once per namespace (by the
// cluster-name label) and reads referenced objects in bulk; opts.Namespace, opts.Name and
// opts.ShowResourceSets say what to read.
func Fetch(ctx context.Context, c Reader, opts ClusterRequest) (*Snapshot, error) {
	d := &discoverer{c: c, opts: opts, versions: map[schema.GroupKind]versionResult{}}
	clusterGVK, ok, err := d.servedGVK(contract.Group, "Cluster")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrCAPINotInstalled
	}
	s := &Snapshot{ServedVersion: clusterGVK.Version}
	// The lists need the cluster's name only, so they are read while the Cluster is (and dropped
	// when it does not exist).
	listCtx, cancelLists := context.WithCancel(ctx)
	defer cancelLists()
	listsDone := make(chan error, 1)
	go func() { listsDone <- d.fetchLists(listCtx, s) }()
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(clusterGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, cl); err != nil {
		cancelLists()
		<-listsDone
		if apierrors.IsNotFound(err) {
			return nil, d.notFound(ctx, clusterGVK)
		}
		return nil, fmt.Errorf("reading cluster %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	cl.SetManagedFields(nil)
	s.Cluster = cl
	// The Cluster's own references (infrastructure, control plane) are read while the lists are:
	// they depend on the Cluster only.
	objs := map[objKey]fetched{}
	var mu sync.Mutex
	singlesDone := make(chan struct{})
	go func() {
		defer close(singlesDone)
		ns := cl.GetNamespace()
		d.fetchSingles(ctx, []ref{readRef(cl.Object, ns, "spec", "infrastructureRef"), readRef(cl.Object, ns, "spec", "controlPlaneRef")}, objs, &mu)
	}()
	err = <-listsDone
	if err == nil {
		d.fetchMachineObjects(ctx, s, objs, &mu)
	}
	<-singlesDone
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Referenced = referencedFrom(objs)
	return s, nil
}

// fetchLists lists the cluster's kinds, all at once: they do not depend on each other.
func (d *discoverer) fetchLists(ctx context.Context, s *Snapshot) error {
	opts := d.opts
	sel := map[string]string{clusterNameLabel: opts.Name}
	g, gctx := errgroup.WithContext(ctx)
	// A kind the server refuses (RBAC) or cannot serve (its conversion webhook down) leaves its
	// part of the tree empty and is named in the tree (a partial view); a bad credential or an
	// unreachable server still fails the describe.
	var reads authz.Reads
	defer func() { s.Unread = reads.Unread() }()
	tolerate := func(err error) error {
		if authz.Tolerable(err) {
			reads.Add(authz.FromError(opts.Namespace, err))
			return nil
		}
		return err
	}
	listInto := func(dst *[]unstructured.Unstructured, group, kind string, sel map[string]string) {
		g.Go(func() error {
			items, err := d.list(gctx, group, kind, opts.Namespace, sel)
			*dst = items
			return tolerate(err)
		})
	}
	listInto(&s.Machines, contract.Group, "Machine", sel)
	listInto(&s.MachineDeployments, contract.Group, "MachineDeployment", sel)
	listInto(&s.MachineSets, contract.Group, "MachineSet", sel)
	listInto(&s.MachinePools, contract.Group, "MachinePool", sel)
	listInto(&s.MachineHealthChecks, contract.Group, "MachineHealthCheck", nil)
	if opts.ShowResourceSets {
		listInto(&s.ClusterResourceSets, addonsGroup, "ClusterResourceSet", nil)
		g.Go(func() error {
			gvk, ok, err := d.servedGVK(addonsGroup, "ClusterResourceSetBinding")
			if err != nil || !ok {
				return err
			}
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			if err := d.c.Get(gctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, u); err != nil {
				if apierrors.IsNotFound(err) {
					return nil
				}
				if tolerate(err) == nil {
					return nil
				}
				return fmt.Errorf("reading ClusterResourceSetBinding %s/%s: %w", opts.Namespace, opts.Name, err)
			}
			u.SetManagedFields(nil)
			s.ClusterResourceSetBinding = u
			return nil
		})
	}
	return g.Wait()
}

// fetchMachineObjects reads the objects machines and pools reference (infrastructure, bootstrap
// configs) in bulk. With grouping, only the objects of machines that stay visible rows are read.
func (d *discoverer) fetchMachineObjects(ctx context.Context, s *Snapshot, objs map[objKey]fetched, mu *sync.Mutex) {
	ns := s.Cluster.GetNamespace()
	var bulk []ref
	visible := visibleMachines(s, d.opts)
	for i := range s.Machines {
		if visible != nil && !visible[s.Machines[i].GetName()] {
			continue
		}
		m := s.Machines[i].Object
		bulk = append(bulk, readRef(m, ns, "spec", "infrastructureRef"), readRef(m, ns, "spec", "bootstrap", "configRef"))
	}
	folded := visible != nil && len(visible) < len(s.Machines)
	for i := range s.MachinePools {
		m := s.MachinePools[i].Object
		bulk = append(bulk, readRef(m, ns, "spec", "template", "spec", "infrastructureRef"), readRef(m, ns, "spec", "template", "spec", "bootstrap", "configRef"))
	}
	d.fetchBulk(ctx, bulk, folded, objs, mu)
}

// referencedFrom lists the read referenced objects in a stable order (kind, then namespace/name).
func referencedFrom(objs map[objKey]fetched) []Referenced {
	var out []Referenced
	for k, f := range objs {
		r := Referenced{Group: k.gk.Group, Kind: k.gk.Kind, Namespace: k.namespace, Name: k.name, Object: f.obj}
		if f.err != nil {
			r.Error = f.err.Error()
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Group+"/"+a.Kind != b.Group+"/"+b.Kind {
			return a.Group+"/"+a.Kind < b.Group+"/"+b.Kind
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out
}

// visibleMachines names the machines that stay rows of the tree opts builds, or is nil when all
// do (no grouping). It builds the tree from the snapshot so far (Build is pure and needs no
// referenced object to decide grouping, which compares the machines' own conditions), so the
// rows it finds are those of the final tree.
func visibleMachines(s *Snapshot, opts ClusterRequest) map[string]bool {
	if !opts.Grouping || len(s.Machines) == 0 {
		return nil
	}
	partial := *s
	partial.Referenced = nil
	tree, err := Build(&partial, opts)
	if err != nil {
		return nil // Build will report it; read everything meanwhile
	}
	out := map[string]bool{}
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Category == CategoryMachine {
			out[n.Name] = true
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree.Root)
	return out
}

// Discover fetches a cluster's snapshot and builds its tree.
func Discover(ctx context.Context, c Reader, opts ClusterRequest) (*Tree, error) {
	s, err := Fetch(ctx, c, opts)
	if err != nil {
		return nil, err
	}
	return Build(s, opts)
}

// notFound explains a missing cluster: a missing namespace, or the clusters that do exist there.
func (d *discoverer) notFound(ctx context.Context, clusterGVK schema.GroupVersionKind) error {
	nsObj := &corev1.Namespace{}
	if err := d.c.Get(ctx, client.ObjectKey{Name: d.opts.Namespace}, nsObj); apierrors.IsNotFound(err) {
		return &NamespaceNotFoundError{Namespace: d.opts.Namespace}
	}
	items, err := d.listGVK(ctx, clusterGVK, d.opts.Namespace, nil)
	e := &cluster.ClusterNotFoundError{Namespace: d.opts.Namespace, Name: d.opts.Name}
	if err == nil {
		for _, it := range items {
			e.Existing = append(e.Existing, it.GetName())
		}
		sort.Strings(e.Existing)
	}
	e.ElsewhereIn = cluster.NamespacesWithCluster(ctx, d.c, d.c.RESTMapper(), d.opts.Name)
	return e
}
