package move

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// Labels and annotations move reads and writes (clusterctl's names, plus capctl's own).
const (
	MoveLabel               = "clusterctl.cluster.x-k8s.io/move"
	MoveHierarchyLabel      = "clusterctl.cluster.x-k8s.io/move-hierarchy"
	BlockMoveAnnotation     = "clusterctl.cluster.x-k8s.io/block-move"
	DeleteForMoveAnnotation = "clusterctl.cluster.x-k8s.io/delete-for-move"
	PausedAnnotation        = "cluster.x-k8s.io/paused"
	// MovePausedAnnotation marks objects capctl paused for a move (value: the move ID), so a re-run
	// tells its own pause from a pause the user set on purpose.
	MovePausedAnnotation = "capctl.cluster.x-k8s.io/move-paused"
	// JournalLabel marks the journal ConfigMap, which is never moved.
	JournalLabel = "capctl.cluster.x-k8s.io/move-journal"
)

// softOwnedSecretSuffixes are the purposes of Secrets that belong to a Cluster by name
// (`<cluster>-<purpose>`), as in clusterctl.
var softOwnedSecretSuffixes = []string{"kubeconfig", "ca", "etcd", "sa", "proxy", "apiserver-etcd-client"}

// Ref names one object.
type Ref struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Namespace  string    `json:"namespace,omitempty"`
	Name       string    `json:"name"`
	UID        types.UID `json:"uid,omitempty"`
}

func (r Ref) String() string {
	if r.Namespace == "" {
		return r.Kind + "/" + r.Name
	}
	return r.Kind + "/" + r.Namespace + "/" + r.Name
}

// Node is one object of the graph.
type Node struct {
	Obj        *unstructured.Unstructured
	Ref        Ref
	Owners     []types.UID // owner references that point at objects of the graph
	SoftOwners []types.UID // ownership without owner references (by name, class, binding, template)
	children   []*Node

	// Cluster is the namespace/name of the Cluster the object belongs to ("" for none).
	Cluster string
	// Global objects (cluster-scoped, or under a cluster-scoped root) are created when absent,
	// never updated, never deleted from the source.
	Global bool
	// KeepInSource objects are copied but not deleted (ClusterClasses and their templates used by
	// clusters that stay behind, or copied for a --cluster move).
	KeepInSource bool
	// UserPaused is set on Clusters and ClusterClasses paused before capctl touched them.
	UserPaused bool
	// Level is the creation level (0 first); -1 when not moved.
	Level int

	sortKey    string
	pausedByUs bool // paused by an earlier, interrupted run of capctl (seen in the source)
	tenant     bool
	force      bool
	blocked    bool
	inMove     bool
	missing    []metav1.OwnerReference
	excluded   string
}

// Exclusion is an object left out of the move with the reason.
type Exclusion struct {
	Object Ref    `json:"object"`
	Reason string `json:"reason"`
}

// Graph is the discovered object graph and the move plan derived from it.
type Graph struct {
	Nodes map[types.UID]*Node
	// Order holds the moved objects level by level (owners before the objects they own).
	Order [][]*Node
	// Excluded lists objects that look related but are not moved, with the reason.
	Excluded []Exclusion
	// Warnings are facts the user should know (a ClusterClass in another namespace, ...).
	Warnings []string
	// Types are the kinds listed (storage versions).
	Types []TypeInfo
	// Namespaces that were listed ("" = all).
	Namespaces []string
	// Providers in the source inventory.
	Providers []inventory.Provider
}

// TypeInfo is one kind discovery lists.
type TypeInfo struct {
	GVK                schema.GroupVersionKind
	Namespaced         bool
	ForceMove          bool
	ForceMoveHierarchy bool
}

// Moved returns the moved nodes in creation order.
func (g *Graph) Moved() []*Node {
	var out []*Node
	for _, l := range g.Order {
		out = append(out, l...)
	}
	return out
}

// Count is the number of moved objects.
func (g *Graph) Count() int {
	n := 0
	for _, l := range g.Order {
		n += len(l)
	}
	return n
}

// Scope selects what to move.
type Scope struct {
	// Namespace to move from (ignored with AllNamespaces).
	Namespace     string
	AllNamespaces bool
	// Clusters limits the move to these clusters' subtrees (names in Namespace, or namespace/name).
	Clusters []string
}

func (s Scope) String() string {
	where := "namespace " + s.Namespace
	if s.AllNamespaces {
		where = "all namespaces"
	}
	if len(s.Clusters) > 0 {
		return fmt.Sprintf("clusters %s in %s", strings.Join(s.Clusters, ", "), where)
	}
	return where
}

// ErrNamespaceNotFound is returned when the namespace to move from does not exist.
var ErrNamespaceNotFound = errors.New("namespace not found")

// ErrNothingToMove is returned when discovery finds nothing to move.
var ErrNothingToMove = errors.New("nothing to move")

// DiscoverTypes lists the kinds to move: CRDs labelled by clusterctl (storage version) plus
// Secrets and ConfigMaps. One LIST of CRDs.
func DiscoverTypes(ctx context.Context, c client.Reader) ([]TypeInfo, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.HasLabels{inventory.ClusterctlLabel}); err != nil {
		return nil, fmt.Errorf("listing CRDs labelled %s: %w", inventory.ClusterctlLabel, err)
	}
	var out []TypeInfo
	for _, crd := range crds.Items {
		if crd.Spec.Group == inventory.Group {
			continue // the provider inventory is never moved
		}
		version := contract.StorageVersion(&crd)
		if version == "" {
			continue
		}
		ti := TypeInfo{
			GVK:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind},
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		}
		_, ti.ForceMove = crd.Labels[MoveLabel]
		_, ti.ForceMoveHierarchy = crd.Labels[MoveHierarchyLabel]
		switch ti.GVK.GroupKind() {
		case schema.GroupKind{Group: contract.Group, Kind: "Cluster"},
			schema.GroupKind{Group: "cluster.x-k8s.io", Kind: "ClusterClass"},
			schema.GroupKind{Group: "addons.cluster.x-k8s.io", Kind: "ClusterResourceSet"}:
			ti.ForceMoveHierarchy = true
		}
		if ti.ForceMoveHierarchy {
			ti.ForceMove = true
		}
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GVK.String() < out[j].GVK.String() })
	out = append(out,
		TypeInfo{GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Namespaced: true},
		TypeInfo{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespaced: true},
	)
	return out, nil
}

// listAll lists every type in every namespace: one LIST per type per namespace (cluster-scoped
// types once), a few at a time. extraSecretNS are namespaces where only Secrets are listed; view
// says which field owners the objects keep.
func listAll(ctx context.Context, c client.Reader, typesToList []TypeInfo, namespaces []string, extraSecretNS []string, view fieldOwners) ([]unstructured.Unstructured, error) {
	jobs := listJobs(typesToList, namespaces, extraSecretNS)
	results := make([][]unstructured.Unstructured, len(jobs))
	err := eachListed(ctx, c, jobs, func(job int, items []unstructured.Unstructured, restart bool) {
		if restart {
			results[job] = nil
		}
		if view == restoredFieldOwners {
			for k := range items {
				dropUnrestoredFieldOwners(&items[k])
			}
		}
		results[job] = append(results[job], items...)
	})
	if err != nil {
		return nil, err
	}
	var out []unstructured.Unstructured
	seen := map[types.UID]bool{}
	for _, r := range results {
		for _, o := range r {
			if seen[o.GetUID()] {
				continue
			}
			seen[o.GetUID()] = true
			out = append(out, o)
		}
	}
	return out, nil
}

// listJob is one LIST: a kind in a namespace ("" for all namespaces or a cluster-scoped kind).
type listJob struct {
	gvk schema.GroupVersionKind
	ns  string
}

func listJobs(typesToList []TypeInfo, namespaces []string, extraSecretNS []string) []listJob {
	var jobs []listJob
	for _, t := range typesToList {
		if !t.Namespaced {
			jobs = append(jobs, listJob{t.GVK, ""})
			continue
		}
		for _, ns := range namespaces {
			jobs = append(jobs, listJob{t.GVK, ns})
		}
		if t.GVK.Group == "" && t.GVK.Kind == "Secret" {
			for _, ns := range extraSecretNS {
				jobs = append(jobs, listJob{t.GVK, ns})
			}
		}
	}
	return jobs
}

// listPageSize is how many objects one LIST of a move asks for: a kind of thousands of objects
// is read a page at a time, so a listing holds a few pages of JSON besides what it keeps.
const listPageSize = 500

// eachListed runs the jobs, listConcurrency at a time, page by page, and gives each page's items
// (their kind set) to page, which may be called from several goroutines at once; restart: the
// job's listing started again (cluster.ListPages), so what page kept of that job is stale. Every
// LIST runs even when one fails, so the error names all that could not be read.
func eachListed(ctx context.Context, c client.Reader, jobs []listJob, page func(job int, items []unstructured.Unstructured, restart bool)) error {
	var unread authz.Reads
	var hard atomic.Bool
	errs := make([]error, len(jobs))
	var g errgroup.Group
	g.SetLimit(listConcurrency)
	for i, j := range jobs {
		g.Go(func() error {
			var opts []client.ListOption
			if j.ns != "" {
				opts = append(opts, client.InNamespace(j.ns))
			}
			err := cluster.ListPages(ctx, c, j.gvk, listPageSize, func(items []unstructured.Unstructured, restart bool) error {
				for k := range items {
					items[k].SetGroupVersionKind(j.gvk)
				}
				page(i, items, restart)
				return nil
			}, opts...)
			if err != nil {
				if authz.Tolerable(err) {
					unread.Add(authz.FromError(j.ns, err))
				} else {
					hard.Store(true)
				}
				where := "all namespaces"
				if j.ns != "" {
					where = "namespace " + j.ns
				}
				errs[i] = fmt.Errorf("listing %s in %s: %w", j.gvk.Kind, where, err)
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs
	if err := errors.Join(errs...); err != nil {
		return &listError{err: err, unread: unread.Unread(), hard: hard.Load()}
	}
	return nil
}

// listConcurrency is how many LISTs a move sends at once.
const listConcurrency = 8

// listError is a listing that failed; unread are the kinds the API server refused or could not
// serve (each of those failed alone), so a caller about to change something can refuse naming them.
type listError struct {
	err    error
	unread []authz.Unreadable
	// hard: some list failed for a reason that is not one kind's (a bad credential, a server gone).
	hard bool
}

func (e *listError) Error() string { return e.err.Error() }
func (e *listError) Unwrap() error { return e.err }

// incompleteSource turns a source listing that failed only on kinds the API server refused or
// could not serve into the refusal of an incomplete view: a move acts on what it lists (it
// deletes the source's objects once the target has them), so what it did not see would be left
// behind or split between two homes.
func incompleteSource(err error) error {
	var le *listError
	if errors.As(err, &le) && len(le.unread) > 0 && !le.hard {
		return &authz.IncompleteError{Command: "capctl move", Unreadable: le.unread}
	}
	return err
}

// Discover reads the source cluster and builds the move graph for the scope, its objects whole.
// A kind it cannot list makes it refuse (authz.IncompleteError), naming every such kind and the
// verbs missing.
func Discover(ctx context.Context, c *cluster.Client, scope Scope) (*Graph, error) {
	return discover(ctx, c, scope, allFieldOwners)
}

// discover is Discover with the field owners the graph's objects keep (view).
func discover(ctx context.Context, c *cluster.Client, scope Scope, view fieldOwners) (*Graph, error) {
	namespaces := []string{""}
	if !scope.AllNamespaces {
		scope.Namespace = c.NamespaceOr(scope.Namespace)
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: scope.Namespace}, ns); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("%w: namespace %q does not exist in the source cluster %s; pass -n with an existing namespace or -A", ErrNamespaceNotFound, scope.Namespace, c.Config.Host)
			}
			return nil, fmt.Errorf("reading namespace %s: %w", scope.Namespace, err)
		}
		namespaces = []string{scope.Namespace}
	}
	typesToList, err := DiscoverTypes(ctx, c)
	if err != nil {
		return nil, err
	}
	providers, err := inventory.List(ctx, c)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return nil, err
	}
	// Secrets of infrastructure providers' namespaces (identity secrets owned by global objects).
	var extra []string
	if !scope.AllNamespaces {
		seen := map[string]bool{scope.Namespace: true}
		for _, p := range providers {
			if p.Type == provider.InfrastructureProviderType && !seen[p.Namespace] {
				seen[p.Namespace] = true
				extra = append(extra, p.Namespace)
			}
		}
	}
	objs, err := listAll(ctx, c, typesToList, namespaces, extra, view)
	if err != nil {
		return nil, incompleteSource(err)
	}
	var foreign map[string]bool
	if !scope.AllNamespaces {
		var classes []unstructured.Unstructured
		if classes, foreign, err = foreignClasses(ctx, c, objs, scope.Namespace, typesToList, view); err != nil {
			return nil, err
		}
		objs = append(objs, classes...)
	}
	g, err := BuildGraph(objs, typesToList, scope)
	if err != nil {
		return nil, err
	}
	keepForeign(g, foreign)
	g.Namespaces = namespaces
	g.Providers = providers
	if !scope.AllNamespaces {
		if err := keepSharedClasses(ctx, c, g, scope.Namespace, typesToList); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// classRef returns the ClusterClass a Cluster uses (namespace defaults to the Cluster's; name ""
// for none), from v1beta2 spec.topology.classRef or v1beta1 spec.topology.class/classNamespace.
func classRef(cl *unstructured.Unstructured) (ns, name string) {
	name, _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name")
	ns, _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "namespace")
	if name == "" { // v1beta1
		name, _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "class")
		ns, _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "classNamespace")
	}
	if ns == "" {
		ns = cl.GetNamespace()
	}
	return ns, name
}

// foreignClasses reads the ClusterClasses that Clusters of the moved namespace use from other
// namespaces, with every template they reference: they are copied to the target (same
// namespace) and kept in the source. It returns them and the set of their "Kind/namespace/name"
// keys. One LIST of ClusterClasses per such namespace, and one LIST per template kind there.
func foreignClasses(ctx context.Context, c client.Reader, objs []unstructured.Unstructured, ns string, typesToList []TypeInfo, view fieldOwners) ([]unstructured.Unstructured, map[string]bool, error) {
	wanted := map[string]map[string]bool{} // namespace -> class names
	for i := range objs {
		o := &objs[i]
		if o.GetKind() != "Cluster" || o.GroupVersionKind().Group != contract.Group {
			continue
		}
		if cns, name := classRef(o); name != "" && cns != ns {
			if wanted[cns] == nil {
				wanted[cns] = map[string]bool{}
			}
			wanted[cns][name] = true
		}
	}
	if len(wanted) == 0 {
		return nil, nil, nil
	}
	byKind := map[string]TypeInfo{}
	for _, t := range typesToList {
		if contract.IsClusterAPIGroup(t.GVK.Group) {
			byKind[t.GVK.Group+"/"+t.GVK.Kind] = t
		}
	}
	classType, ok := byKind["cluster.x-k8s.io/ClusterClass"]
	if !ok {
		return nil, nil, nil
	}
	var out []unstructured.Unstructured
	keys := map[string]bool{}
	var cnss []string
	for cns := range wanted {
		cnss = append(cnss, cns)
	}
	sort.Strings(cnss)
	for _, cns := range cnss {
		listed, err := listAll(ctx, c, []TypeInfo{classType}, []string{cns}, nil, view)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the ClusterClasses of namespace %s that Clusters of %s use: %w", cns, ns, err)
		}
		templates := map[string]map[string]bool{} // group/kind -> names
		var kinds []TypeInfo
		for _, cc := range listed {
			if !wanted[cns][cc.GetName()] {
				continue
			}
			out = append(out, cc)
			keys[key(cc.GetKind(), cns, cc.GetName())] = true
			walkTemplateRefsGroup(cc.Object["spec"], func(group, kind, name string) {
				t, ok := byKind[group+"/"+kind]
				if !ok {
					return // not a kind the move knows: BuildGraph leaves the reference alone
				}
				gk := group + "/" + kind
				if templates[gk] == nil {
					templates[gk] = map[string]bool{}
					kinds = append(kinds, t)
				}
				templates[gk][name] = true
			})
		}
		if len(kinds) == 0 {
			continue
		}
		tmpls, err := listAll(ctx, c, kinds, []string{cns}, nil, view)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the templates of the ClusterClasses of namespace %s: %w", cns, err)
		}
		for _, o := range tmpls {
			if templates[o.GroupVersionKind().Group+"/"+o.GetKind()][o.GetName()] {
				out = append(out, o)
				keys[key(o.GetKind(), cns, o.GetName())] = true
			}
		}
	}
	return out, keys, nil
}

// keepForeign marks the ClusterClasses and templates foreignClasses read (and only them) as
// copied and kept in the source, and says so.
func keepForeign(g *Graph, foreign map[string]bool) {
	if len(foreign) == 0 {
		return
	}
	classes := map[string]int{}
	for _, n := range g.Moved() {
		if foreign[key(n.Ref.Kind, n.Ref.Namespace, n.Ref.Name)] {
			n.KeepInSource = true
			if !isClusterClassNode(n) {
				for _, u := range n.SoftOwners {
					if o := g.Nodes[u]; o != nil && isClusterClassNode(o) {
						classes[o.Ref.Namespace+"/"+o.Ref.Name]++
					}
				}
			} else if _, ok := classes[n.Ref.Namespace+"/"+n.Ref.Name]; !ok {
				classes[n.Ref.Namespace+"/"+n.Ref.Name] = 0
			}
		}
	}
	var names []string
	for cc := range classes {
		names = append(names, cc)
	}
	sort.Strings(names)
	for _, cc := range names {
		g.Warnings = append(g.Warnings, fmt.Sprintf("ClusterClass %s, used by Clusters of the moved namespace, lives in another namespace: it and its %d templates are copied to the target (same namespace) and kept in the source", cc, classes[cc]))
	}
}

// keepSharedClasses marks moved ClusterClasses that Clusters of other namespaces use (and their
// templates) as copied-not-deleted. One cluster-wide LIST of Clusters, only when classes move.
func keepSharedClasses(ctx context.Context, c client.Reader, g *Graph, ns string, typesToList []TypeInfo) error {
	classes := map[string]*Node{}
	for _, n := range g.Moved() {
		if isClusterClassNode(n) && !n.KeepInSource {
			classes[n.Ref.Name] = n
		}
	}
	var clusterType *TypeInfo
	for i := range typesToList {
		if typesToList[i].GVK.Group == contract.Group && typesToList[i].GVK.Kind == "Cluster" {
			clusterType = &typesToList[i]
		}
	}
	if len(classes) == 0 || clusterType == nil {
		return nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(clusterType.GVK.GroupVersion().WithKind("ClusterList"))
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("listing Clusters of every namespace (to find shared ClusterClasses): %w", err)
	}
	users := map[*Node][]string{}
	for _, cl := range list.Items {
		if cl.GetNamespace() == ns {
			continue
		}
		cns, name := classRef(&cl)
		if cc := classes[name]; cc != nil && cns == ns {
			users[cc] = append(users[cc], cl.GetNamespace()+"/"+cl.GetName())
		}
	}
	for cc, who := range users {
		sort.Strings(who)
		stack := []*Node{cc}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n.KeepInSource {
				continue
			}
			n.KeepInSource = true
			for _, ch := range n.children {
				if ch.Level >= 0 && ch.Cluster == "" && !isClusterNode(ch) {
					stack = append(stack, ch)
				}
			}
		}
		g.Warnings = append(g.Warnings, fmt.Sprintf("ClusterClass %s/%s is also used by Clusters of other namespaces (%s): it is copied to the target and kept in the source", ns, cc.Ref.Name, strings.Join(who, ", ")))
	}
	return nil
}

func key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

// BuildGraph builds nodes, edges, tenants, the move set and the order from listed objects. It is
// linear in objects plus edges. Each phase is a method of graphBuilder, run in this order.
func BuildGraph(objs []unstructured.Unstructured, typesToList []TypeInfo, scope Scope) (*Graph, error) {
	b := newGraphBuilder(objs, typesToList)
	b.linkOwners()
	b.linkSoftOwners()
	b.markTenants()
	b.markUserPaused()
	if err := b.selectMoveSet(scope); err != nil {
		return nil, err
	}
	b.excludeUnmovedOwners()
	order(b.g, b.nodes)
	b.listExclusions(scope)
	return b.g, nil
}

// graphBuilder holds what BuildGraph's phases share: the graph, its nodes in a stable order
// (kind, namespace, name), and the lookups by group/kind and by "Kind/namespace/name".
type graphBuilder struct {
	g        *Graph
	typeByGK map[schema.GroupKind]TypeInfo
	byKey    map[string]*Node
	nodes    []*Node
}

// newGraphBuilder makes one node per listed object (the journal excepted), sorted.
func newGraphBuilder(objs []unstructured.Unstructured, typesToList []TypeInfo) *graphBuilder {
	b := &graphBuilder{
		g:        &Graph{Nodes: make(map[types.UID]*Node, len(objs)), Types: typesToList},
		typeByGK: map[schema.GroupKind]TypeInfo{},
		byKey:    make(map[string]*Node, len(objs)),
	}
	for _, t := range typesToList {
		b.typeByGK[t.GVK.GroupKind()] = t
	}
	for i := range objs {
		o := &objs[i]
		if _, ok := o.GetLabels()[JournalLabel]; ok {
			continue
		}
		gvk := o.GroupVersionKind()
		n := &Node{
			Obj:   o,
			Ref:   Ref{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()},
			Level: -1,
		}
		t := b.typeByGK[gvk.GroupKind()]
		n.Global = !t.Namespaced
		labels := o.GetLabels()
		_, objMove := labels[MoveLabel]
		_, objHier := labels[MoveHierarchyLabel]
		n.force = t.ForceMove || objMove || objHier
		_, n.blocked = o.GetAnnotations()[BlockMoveAnnotation]
		n.sortKey = n.Ref.String()
		b.g.Nodes[n.Ref.UID] = n
		b.byKey[key(gvk.Kind, n.Ref.Namespace, n.Ref.Name)] = n
		b.nodes = append(b.nodes, n)
	}
	// Stable order: by kind, namespace, name.
	sort.Slice(b.nodes, func(i, j int) bool { return b.nodes[i].sortKey < b.nodes[j].sortKey })
	return b
}

// linkOwners adds the edges of owner references; a reference to an object not listed is kept
// as missing.
func (b *graphBuilder) linkOwners() {
	for _, n := range b.nodes {
		for _, ref := range n.Obj.GetOwnerReferences() {
			owner, ok := b.g.Nodes[ref.UID]
			if !ok {
				n.missing = append(n.missing, ref)
				continue
			}
			n.Owners = append(n.Owners, ref.UID)
			owner.children = append(owner.children, n)
		}
	}
}

// addSoft makes owner a soft owner of child, once, unless it already owns it.
func addSoft(child, owner *Node) {
	if child == nil || owner == nil || child == owner {
		return
	}
	for _, u := range child.Owners {
		if u == owner.Ref.UID {
			return
		}
	}
	for _, u := range child.SoftOwners {
		if u == owner.Ref.UID {
			return
		}
	}
	child.SoftOwners = append(child.SoftOwners, owner.Ref.UID)
	owner.children = append(owner.children, child)
}

// linkSoftOwners adds the edges owner references do not say: a Cluster's Secrets by name, the
// ClusterClass a Cluster uses, a ClusterResourceSetBinding's Cluster, a ClusterResourceSet's
// resources and a ClusterClass's templates.
func (b *graphBuilder) linkSoftOwners() {
	for _, n := range b.nodes {
		o := n.Obj.Object
		switch {
		case n.Ref.APIVersion == "v1" && (n.Ref.Kind == "Secret" || n.Ref.Kind == "ConfigMap") && len(n.Obj.GetOwnerReferences()) == 0:
			for _, purpose := range softOwnedSecretSuffixes {
				if name := n.Ref.Name; strings.HasSuffix(name, "-"+purpose) {
					if c := b.byKey[key("Cluster", n.Ref.Namespace, strings.TrimSuffix(name, "-"+purpose))]; c != nil && isClusterNode(c) {
						addSoft(n, c)
						break
					}
				}
			}
		case isClusterNode(n):
			if ns, name := classRef(n.Obj); name != "" {
				if cc := b.byKey[key("ClusterClass", ns, name)]; cc != nil {
					addSoft(n, cc)
				} else {
					b.g.Warnings = append(b.g.Warnings, fmt.Sprintf("Cluster %s/%s uses ClusterClass %s/%s, which was not found in the listed namespaces; it is not copied (move it first, or use -A)", n.Ref.Namespace, n.Ref.Name, ns, name))
				}
			}
		case n.Ref.Kind == "ClusterResourceSetBinding":
			if name, _, _ := unstructured.NestedString(o, "spec", "clusterName"); name != "" {
				addSoft(n, b.byKey[key("Cluster", n.Ref.Namespace, name)])
			}
		case n.Ref.Kind == "ClusterResourceSet":
			res, _, _ := unstructured.NestedSlice(o, "spec", "resources")
			for _, r := range res {
				m, _ := r.(map[string]any)
				kind, _ := m["kind"].(string)
				name, _ := m["name"].(string)
				if kind == "Secret" || kind == "ConfigMap" {
					addSoft(b.byKey[key(kind, n.Ref.Namespace, name)], n)
				}
			}
		case n.Ref.Kind == "ClusterClass":
			walkTemplateRefs(o["spec"], func(kind, name string) {
				addSoft(b.byKey[key(kind, n.Ref.Namespace, name)], n)
			})
		}
	}
}

// markTenants walks from every root (move-hierarchy types or labels) over owned and soft-owned
// descendants. Clusters are walked first so every object learns the Cluster it belongs to.
func (b *graphBuilder) markTenants() {
	var roots []*Node
	for _, n := range b.nodes {
		t := b.typeByGK[n.Obj.GroupVersionKind().GroupKind()]
		_, objHier := n.Obj.GetLabels()[MoveHierarchyLabel]
		if t.ForceMoveHierarchy || objHier {
			roots = append(roots, n)
		}
	}
	sort.SliceStable(roots, func(i, j int) bool { return isClusterNode(roots[i]) && !isClusterNode(roots[j]) })
	visitedBy := make(map[*Node]*Node, len(b.nodes))
	for _, r := range roots {
		clusterName := ""
		if isClusterNode(r) {
			clusterName = r.Ref.Namespace + "/" + r.Ref.Name
		}
		stack := []*Node{r}
		visitedBy[r] = r
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			n.tenant = true
			if clusterName != "" && n.Cluster == "" {
				n.Cluster = clusterName
			}
			if r.Global {
				n.Global = true
			}
			for _, ch := range n.children {
				// A ClusterClass's walk does not descend into the Clusters using it: they are
				// roots of their own.
				if visitedBy[ch] == r || (isClusterNode(ch) && ch != r) {
					continue
				}
				visitedBy[ch] = r
				stack = append(stack, ch)
			}
		}
	}
}

// markUserPaused records the pause state of Clusters and ClusterClasses before the move (a
// pause capctl set is not the user's).
func (b *graphBuilder) markUserPaused() {
	for _, n := range b.nodes {
		if isClusterNode(n) {
			paused, _, _ := unstructured.NestedBool(n.Obj.Object, "spec", "paused")
			_, ours := n.Obj.GetAnnotations()[MovePausedAnnotation]
			n.UserPaused = paused && !ours
		}
		if n.Ref.Kind == "ClusterClass" {
			_, paused := n.Obj.GetAnnotations()[PausedAnnotation]
			_, ours := n.Obj.GetAnnotations()[MovePausedAnnotation]
			n.UserPaused = paused && !ours
		}
	}
}

// selectMoveSet marks what moves: the chosen clusters' subtrees (selectClusters), or every
// tenant and forced object.
func (b *graphBuilder) selectMoveSet(scope Scope) error {
	if len(scope.Clusters) > 0 {
		return b.selectClusters(scope)
	}
	for _, n := range b.nodes {
		n.inMove = n.tenant || n.force
	}
	return nil
}

// excludeUnmovedOwners excludes objects whose owners do not exist or are not moved; through the
// order, everything they own is excluded too.
func (b *graphBuilder) excludeUnmovedOwners() {
	for _, n := range b.nodes {
		if !n.inMove {
			continue
		}
		if len(n.missing) > 0 {
			r := n.missing[0]
			n.excluded = fmt.Sprintf("its owner %s %s (uid %s) does not exist", r.Kind, r.Name, r.UID)
			continue
		}
		for _, u := range n.Owners {
			if o := b.g.Nodes[u]; !o.inMove {
				n.excluded = fmt.Sprintf("its owner %s is not moved (%s)", o.Ref, notMovedReason(o))
				break
			}
		}
	}
}

// listExclusions lists the exclusions worth showing: objects of Cluster API kinds, and
// Secrets/ConfigMaps that look like they belong to a cluster, that are not moved.
func (b *graphBuilder) listExclusions(scope Scope) {
	for _, n := range b.nodes {
		if n.Level >= 0 {
			continue
		}
		reason := n.excluded
		if reason == "" && !n.inMove {
			if len(scope.Clusters) > 0 && (n.tenant || n.force) {
				continue // belongs to a cluster that was not selected
			}
			if !looksRelated(n) {
				continue
			}
			reason = b.unmovedReason(n)
		}
		if reason == "" {
			reason = "it is part of an ownership cycle"
		}
		b.g.Excluded = append(b.g.Excluded, Exclusion{Object: n.Ref, Reason: reason})
	}
}

// unmovedReason says why an object outside the move set is not moved.
func (b *graphBuilder) unmovedReason(n *Node) string {
	if len(n.missing) > 0 {
		r := n.missing[0]
		return fmt.Sprintf("its owner %s %s (uid %s) does not exist, so it is not linked with any Cluster", r.Kind, r.Name, r.UID)
	}
	for _, u := range n.Owners {
		if o := b.g.Nodes[u]; !o.inMove {
			return fmt.Sprintf("its owner %s is not moved", o.Ref)
		}
	}
	return notMovedReason(n)
}

func notMovedReason(n *Node) string {
	if n.Ref.APIVersion == "v1" {
		return fmt.Sprintf("not linked with any Cluster; label it %s to move it", MoveLabel)
	}
	return "not linked with any Cluster, ClusterClass or ClusterResourceSet"
}

// looksRelated tells whether an unmoved object deserves a line in the exclusions: Cluster API
// kinds always; Secrets and ConfigMaps only when a label or owner ties them to Cluster API.
func looksRelated(n *Node) bool {
	if n.Ref.APIVersion != "v1" {
		return true
	}
	if _, ok := n.Obj.GetLabels()["cluster.x-k8s.io/cluster-name"]; ok {
		return true
	}
	for _, r := range n.Obj.GetOwnerReferences() {
		if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil && contract.IsClusterAPIGroup(gv.Group) {
			return true
		}
	}
	return false
}

// selectClusters marks the subtrees of the chosen clusters, plus copies (kept in the source) of
// the ClusterClasses, ClusterResourceSets and other owners they need.
func (b *graphBuilder) selectClusters(scope Scope) error {
	g, nodes, byKey := b.g, b.nodes, b.byKey
	var missing []string
	var stack []*Node
	for _, name := range scope.Clusters {
		ns := scope.Namespace
		if i := strings.Index(name, "/"); i >= 0 {
			ns, name = name[:i], name[i+1:]
		} else if scope.AllNamespaces {
			// A bare name with -A must name one Cluster: several namespaces may use it.
			var found []*Node
			var where []string
			for _, n := range nodes {
				if isClusterNode(n) && n.Ref.Name == name {
					found = append(found, n)
					where = append(where, n.Ref.Namespace+"/"+name)
				}
			}
			switch len(found) {
			case 0:
				missing = append(missing, name)
			case 1:
				stack = append(stack, found[0])
			default:
				return fmt.Errorf("--cluster %s with -A is ambiguous: Clusters %s have that name; pass NAMESPACE/NAME", name, strings.Join(where, ", "))
			}
			continue
		}
		c := byKey[key("Cluster", ns, name)]
		if c == nil || !isClusterNode(c) {
			missing = append(missing, ns+"/"+name)
			continue
		}
		stack = append(stack, c)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: cluster(s) %s not found in %s", ErrNothingToMove, strings.Join(missing, ", "), scope)
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.inMove {
			continue
		}
		n.inMove = true
		for _, ch := range n.children {
			if !isClusterNode(ch) {
				stack = append(stack, ch)
			}
		}
	}
	// Copy owners (hard and soft) of moved objects that are not moved, with their own
	// cluster-less descendants (a ClusterClass's templates, a ClusterResourceSet's resources).
	var up []*Node
	for _, n := range nodes {
		if n.inMove {
			up = append(up, n)
		}
	}
	for len(up) > 0 {
		n := up[len(up)-1]
		up = up[:len(up)-1]
		for _, u := range append(append([]types.UID{}, n.Owners...), n.SoftOwners...) {
			o := g.Nodes[u]
			if o.inMove {
				continue
			}
			o.inMove, o.KeepInSource = true, true
			up = append(up, o)
			for _, ch := range o.children {
				if !ch.inMove && ch.Cluster == "" && !isClusterNode(ch) {
					ch.inMove, ch.KeepInSource = true, true
					up = append(up, ch)
				}
			}
		}
	}
	return nil
}

// order places moved objects in levels: an object's level is after all its owners' (hard and
// soft). Kahn's algorithm, linear; what is left unplaced is in a cycle or under an excluded owner.
func order(g *Graph, nodes []*Node) {
	indeg := make(map[*Node]int, len(nodes))
	var current []*Node
	for _, n := range nodes {
		if !n.inMove || n.excluded != "" {
			continue
		}
		d := len(n.Owners)
		for _, u := range n.SoftOwners {
			if o := g.Nodes[u]; o.inMove {
				d++
			}
		}
		indeg[n] = d
		if d == 0 {
			current = append(current, n)
		}
	}
	for level := 0; len(current) > 0; level++ {
		g.Order = append(g.Order, current)
		var next []*Node
		for _, n := range current {
			n.Level = level
			for _, ch := range n.children {
				if _, ok := indeg[ch]; !ok {
					continue
				}
				indeg[ch]--
				if indeg[ch] == 0 {
					next = append(next, ch)
				}
			}
		}
		sort.Slice(next, func(i, j int) bool { return next[i].sortKey < next[j].sortKey })
		current = next
	}
	// Explain what was not placed: descendants of excluded objects say which owner kept them out.
	var queue []*Node
	for _, n := range nodes {
		if n.inMove && n.excluded != "" {
			queue = append(queue, n)
		}
	}
	for len(queue) > 0 {
		o := queue[0]
		queue = queue[1:]
		for _, ch := range o.children {
			if _, ok := indeg[ch]; !ok || ch.Level >= 0 || ch.excluded != "" {
				continue
			}
			ch.excluded = fmt.Sprintf("its owner %s is not moved", o.Ref)
			queue = append(queue, ch)
		}
	}
}

// walkTemplateRefsGroup is walkTemplateRefs with each reference's API group (v1beta2 apiGroup,
// or the group of v1beta1/v1beta2 apiVersion).
func walkTemplateRefsGroup(v any, fn func(group, kind, name string)) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if k == "templateRef" || k == "ref" {
				if m, ok := child.(map[string]any); ok {
					kind, _ := m["kind"].(string)
					name, _ := m["name"].(string)
					group, _ := m["apiGroup"].(string)
					if av, _ := m["apiVersion"].(string); group == "" && av != "" {
						if gv, err := schema.ParseGroupVersion(av); err == nil {
							group = gv.Group
						}
					}
					if kind != "" && name != "" {
						fn(group, kind, name)
					}
				}
			}
			walkTemplateRefsGroup(child, fn)
		}
	case []any:
		for _, child := range t {
			walkTemplateRefsGroup(child, fn)
		}
	}
}

// walkTemplateRefs calls fn for every {kind, name} reference under a ClusterClass spec
// (v1beta2 `templateRef`, v1beta1 `ref`).
func walkTemplateRefs(v any, fn func(kind, name string)) {
	walkTemplateRefsGroup(v, func(_, kind, name string) { fn(kind, name) })
}
