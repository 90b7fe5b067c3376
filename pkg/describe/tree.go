package describe

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/authz"
)

// Category says how a row is presented (which counters and which condition it shows).
type Category string

// Row categories.
const (
	CategoryCluster           Category = "Cluster"
	CategoryControlPlane      Category = "ControlPlane"
	CategoryMachineDeployment Category = "MachineDeployment"
	CategoryMachineSet        Category = "MachineSet"
	CategoryMachinePool       Category = "MachinePool"
	CategoryMachine           Category = "Machine"
	CategoryHealthCheck       Category = "MachineHealthCheck"
	CategoryVirtual           Category = "Virtual"
	CategoryGroup             Category = "Group"
	CategoryReference         Category = "Reference" // a template or resource set, shown by name only
	CategoryObject            Category = "Object"    // any other provider object (Ready condition)
)

// Node is one row of the tree: an object, a virtual heading (Workers, Templates, …) or a group of
// machines in the same state.
type Node struct {
	Kind       string   `json:"kind"`
	APIVersion string   `json:"apiVersion,omitempty"`
	Namespace  string   `json:"namespace,omitempty"`
	Name       string   `json:"name"`
	Category   Category `json:"category"`
	// Role is the part the object plays for its parent (ClusterInfrastructure, ControlPlane,
	// MachineInfrastructure, BootstrapConfig, MachineInfrastructureTemplate, …).
	Role    string `json:"role,omitempty"`
	Version string `json:"version,omitempty"`
	// Topology names the ClusterClass of a topology-managed Cluster.
	Topology string `json:"clusterClass,omitempty"`
	Deleting bool   `json:"deleting,omitempty"`
	Paused   bool   `json:"paused,omitempty"`
	// Missing is set when a reference points at an object that could not be read; Error says why.
	Missing bool   `json:"missing,omitempty"`
	Error   string `json:"error,omitempty"`

	Replicas          *Replicas    `json:"replicas,omitempty"`
	Conditions        []Condition  `json:"conditions,omitempty"`
	V1Beta1Conditions []Condition  `json:"v1beta1Conditions,omitempty"`
	Group             *Group       `json:"group,omitempty"`
	HealthCheck       *HealthCheck `json:"healthCheck,omitempty"`
	// FirstFailing (Cluster only) names the first object or condition, in tree order, that is not
	// in its normal state when the Cluster is not available.
	FirstFailing string `json:"firstFailing,omitempty"`

	Children []*Node `json:"children,omitempty"`

	zOrder         int
	groupingParent bool
	noEcho         bool
	showConditions conditionFilter
	labels         map[string]string
}

// Replicas are the counters of a row; nil fields are unknown.
type Replicas struct {
	Current   *int32 `json:"current,omitempty"`
	Desired   *int32 `json:"desired,omitempty"`
	Available *int32 `json:"available,omitempty"`
	Ready     *int32 `json:"ready,omitempty"`
	UpToDate  *int32 `json:"upToDate,omitempty"`
}

// Group describes a row that stands for several machines in the same state.
type Group struct {
	Items     []string `json:"items"`
	Available int      `json:"available"`
	Ready     int      `json:"ready"`
	UpToDate  int      `json:"upToDate"`
}

// HealthCheck is what a MachineHealthCheck sees of the cluster's machines.
type HealthCheck struct {
	Selected         int      `json:"selected"`
	Unhealthy        []string `json:"unhealthy,omitempty"`
	ExpectedMachines *int32   `json:"expectedMachines,omitempty"`
	CurrentHealthy   *int32   `json:"currentHealthy,omitempty"`
}

// Tree is the result of describing one cluster.
type Tree struct {
	Root *Node `json:"cluster"`
	// V1Beta1 is set when the tree was built for the v1beta1 presentation (--v1beta2=false).
	V1Beta1 bool `json:"v1beta1Presentation,omitempty"`
	// ServedVersion is the cluster.x-k8s.io version the objects were read at.
	ServedVersion string `json:"servedVersion"`
	// Unread are the kinds that could not be read: the tree is a partial view without them.
	Unread []authz.Unreadable `json:"unread,omitempty"`
}

// Partial tells whether some kind of the tree could not be read: the view misses it.
func (t *Tree) Partial() bool { return len(t.Unread) > 0 }

func (n *Node) condition(t string) *Condition { return findCondition(n.Conditions, t) }

func (n *Node) v1beta1Ready() *Condition { return findCondition(n.V1Beta1Conditions, readyCondition) }

// objectRef is "namespace/name" (or just the name for cluster-scoped or virtual rows).
func (n *Node) objectRef() string {
	if n.Namespace == "" {
		return n.Name
	}
	return n.Namespace + "/" + n.Name
}

// --- condition filter (--show-conditions) ---

type conditionFilter int

const (
	showNone conditionFilter = iota
	showAll
	showNonZero
)

// ValidateShowConditions checks a --show-conditions value before any cluster is contacted.
func ValidateShowConditions(v string) error {
	if strings.ContainsAny(v, " \t\n\r") {
		return fmt.Errorf("invalid --show-conditions value %q: whitespace is not allowed", v)
	}
	for _, f := range strings.Split(v, ",") {
		if strings.Count(f, "/") > 1 {
			return fmt.Errorf("invalid --show-conditions entry %q: use all, KIND or KIND/NAME (each may end with +)", f)
		}
		if strings.HasPrefix(f, "/") || strings.HasSuffix(strings.TrimSuffix(f, "+"), "/") {
			return fmt.Errorf("invalid --show-conditions entry %q: use all, KIND or KIND/NAME (each may end with +)", f)
		}
	}
	return nil
}

func matchShowConditions(kind, name, spec string) conditionFilter {
	if spec == "" {
		return showNone
	}
	for _, f := range strings.Split(spec, ",") {
		if f == "" {
			continue
		}
		plus := strings.HasSuffix(f, "+")
		f = strings.TrimSuffix(f, "+")
		mode := showAll
		if plus {
			mode = showNonZero
		}
		if strings.EqualFold(f, "all") {
			return mode
		}
		if k, nm, ok := strings.Cut(f, "/"); ok {
			if strings.EqualFold(k, kind) && strings.EqualFold(nm, name) {
				return mode
			}
			continue
		}
		if strings.EqualFold(f, kind) {
			return mode
		}
	}
	return showNone
}

// --- building: echo and grouping (clusterctl's rules) ---

type builder struct {
	opts ClusterRequest
	// kinds are the kinds of the objects added (shown, hidden as echoes or grouped), by lower-case
	// name, for checking --show-conditions.
	kinds map[string]string
}

// seen records an object's kind.
func (b *builder) seen(n *Node) {
	if n.Category == CategoryVirtual || n.Kind == "" {
		return
	}
	if b.kinds == nil {
		b.kinds = map[string]string{}
	}
	b.kinds[strings.ToLower(n.Kind)] = n.Kind
}

// UnknownKindError says a --show-conditions entry names a kind the cluster's tree does not have.
type UnknownKindError struct {
	Entry, Kind string
	// Cluster is namespace/name; Kinds are the kinds in its tree, sorted.
	Cluster string
	Kinds   []string
}

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("--show-conditions %s: the tree of cluster %s has no %s; its kinds are %s", e.Entry, e.Cluster, e.Kind, strings.Join(e.Kinds, ", "))
}

// checkShowConditions refuses entries whose kind is not in the tree (a typo would otherwise show
// nothing, silently).
func (b *builder) checkShowConditions(cluster string) error {
	for _, f := range strings.Split(b.opts.ShowConditions, ",") {
		kind, _, _ := strings.Cut(strings.TrimSuffix(f, "+"), "/")
		if kind == "" || strings.EqualFold(kind, "all") {
			continue
		}
		if _, ok := b.kinds[strings.ToLower(kind)]; !ok {
			kinds := make([]string, 0, len(b.kinds))
			for _, k := range b.kinds {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
			return &UnknownKindError{Entry: f, Kind: kind, Cluster: cluster, Kinds: kinds}
		}
	}
	return nil
}

func sameStatusReason(a, b *Condition) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || (a.Status == b.Status && a.Reason == b.Reason)
}

func sameStatusSeverityReason(a, b *Condition) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return a == nil || (a.Status == b.Status && a.Severity == b.Severity && a.Reason == b.Reason)
}

// add attaches n under parent, applying the echo and grouping rules. It reports whether n itself
// became visible (false when hidden as an echo or merged into a group).
func (b *builder) add(parent, n *Node) bool {
	b.seen(n)
	n.showConditions = matchShowConditions(n.Kind, n.Name, b.opts.ShowConditions)
	v1 := b.opts.V1Beta1

	if n.noEcho && !b.opts.Echo && !n.Missing {
		if v1 {
			r := n.v1beta1Ready()
			if (r != nil && r.Status == "True") || sameStatusSeverityReason(parent.v1beta1Ready(), r) {
				return false
			}
		} else {
			r := n.condition(readyCondition)
			if (r != nil && r.Status == "True") || sameStatusReason(parent.condition(readyCondition), r) {
				return false
			}
		}
	}

	if parent.groupingParent && b.opts.Grouping {
		siblings := append([]*Node(nil), parent.Children...)
		sort.SliceStable(siblings, func(i, j int) bool { return siblings[i].Kind < siblings[j].Kind })
		for _, s := range siblings {
			if !b.sameState(n, s) {
				continue
			}
			if s.Category == CategoryGroup {
				if s.Kind == n.Kind+"Group" {
					b.joinGroup(s, n)
					return false
				}
				continue
			}
			if s.Kind != n.Kind || s.Missing || n.Missing {
				continue
			}
			g := b.newGroup(s, n)
			for i, c := range parent.Children {
				if c == s {
					parent.Children[i] = g
				}
			}
			return false
		}
	}
	parent.Children = append(parent.Children, n)
	return true
}

func (b *builder) sameState(a, s *Node) bool {
	if b.opts.V1Beta1 {
		return sameStatusSeverityReason(a.v1beta1Ready(), s.v1beta1Ready())
	}
	return sameStatusReason(a.condition(availableCondition), s.condition(availableCondition)) &&
		sameStatusReason(a.condition(readyCondition), s.condition(readyCondition)) &&
		sameStatusReason(a.condition(upToDateCondition), s.condition(upToDateCondition))
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	if b.IsZero() || a.Before(b) {
		return a
	}
	return b
}

func (b *builder) newGroup(s, n *Node) *Node {
	g := &Node{
		Kind: n.Kind + "Group", Namespace: n.Namespace, Category: CategoryGroup,
		Group:  &Group{Items: []string{s.Name, n.Name}},
		zOrder: n.zOrder,
	}
	if b.opts.V1Beta1 {
		if r := n.v1beta1Ready(); r != nil {
			c := *r
			c.Message = ""
			if sr := s.v1beta1Ready(); sr != nil {
				c.LastTransitionTime = earliest(c.LastTransitionTime, sr.LastTransitionTime)
			}
			g.V1Beta1Conditions = []Condition{c}
		}
	} else {
		for _, t := range []string{availableCondition, readyCondition, upToDateCondition} {
			c := n.condition(t)
			if c == nil {
				continue
			}
			gc := Condition{Type: t, Status: c.Status, Reason: c.Reason}
			if t == readyCondition {
				gc.LastTransitionTime = c.LastTransitionTime
				if sc := s.condition(t); sc != nil {
					gc.LastTransitionTime = earliest(gc.LastTransitionTime, sc.LastTransitionTime)
				}
			}
			g.Conditions = append(g.Conditions, gc)
		}
	}
	for _, m := range []*Node{s, n} {
		b.countInGroup(g, m)
	}
	return g
}

func (b *builder) joinGroup(g, n *Node) {
	g.Group.Items = append(g.Group.Items, n.Name) // sorted and named once, by finishGroups
	b.countInGroup(g, n)
	if b.opts.V1Beta1 {
		if gr, r := g.v1beta1Ready(), n.v1beta1Ready(); gr != nil && r != nil {
			gr.LastTransitionTime = earliest(gr.LastTransitionTime, r.LastTransitionTime)
		}
		return
	}
	if gr, r := g.condition(readyCondition), n.condition(readyCondition); gr != nil && r != nil {
		gr.LastTransitionTime = earliest(gr.LastTransitionTime, r.LastTransitionTime)
	}
}

func (b *builder) countInGroup(g, m *Node) {
	if c := m.condition(availableCondition); c != nil && c.Status == "True" {
		g.Group.Available++
	}
	if c := m.condition(readyCondition); c != nil && c.Status == "True" {
		g.Group.Ready++
	}
	if c := m.condition(upToDateCondition); c != nil && c.Status == "True" {
		g.Group.UpToDate++
	}
}

// --- ordering and the first failing condition ---

// rowName is the plain (uncoloured) name of a row, used for ordering.
func (n *Node) rowName() string {
	switch {
	case n.Category == CategoryGroup:
		return fmt.Sprintf("%d %s...", len(n.Group.Items), pluralKind(strings.TrimSuffix(n.Kind, "Group")))
	case n.Category == CategoryVirtual:
		return n.Name
	}
	name := n.Kind + " " + n.objectRef()
	if n.Version != "" {
		name += ", " + n.Version
	}
	if n.Deleting {
		name = "!! DELETED !! " + name
	}
	return name
}

func pluralKind(k string) string {
	switch {
	case strings.HasSuffix(k, "s"):
		return k + "es"
	case strings.HasSuffix(k, "y"):
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}

// sortTree orders every node's children as clusterctl prints them: higher z-order first, then
// by row name (groups of equal size by their first member, so output is stable).
// finishGroups sorts each group's items and names the group after them, once the tree is built:
// doing it on every join made grouping N machines quadratic (10,000 machines: 10,000 sorts and
// joins of up to 10,000 names).
func finishGroups(n *Node) {
	if n.Category == CategoryGroup && n.Group != nil {
		sort.Strings(n.Group.Items)
		n.Name = strings.Join(n.Group.Items, ",")
	}
	for _, c := range n.Children {
		finishGroups(c)
	}
}

func sortTree(n *Node) {
	sort.SliceStable(n.Children, func(i, j int) bool {
		a, b := n.Children[i], n.Children[j]
		if a.zOrder != b.zOrder {
			return a.zOrder > b.zOrder
		}
		if an, bn := a.rowName(), b.rowName(); an != bn {
			return an < bn
		}
		return a.Name < b.Name
	})
	for _, c := range n.Children {
		sortTree(c)
	}
}

// rowCondition is the condition a row shows in its STATUS/REASON/SINCE/MESSAGE columns in the
// v1beta2 presentation.
func (n *Node) rowCondition() *Condition {
	switch n.Category {
	case CategoryCluster, CategoryMachineDeployment:
		return n.condition(availableCondition)
	case CategoryControlPlane:
		if c := n.condition(availableCondition); c != nil {
			return c
		}
		return n.condition(readyCondition)
	case CategoryMachineSet, CategoryReference, CategoryVirtual:
		return nil
	case CategoryHealthCheck:
		return n.condition("RemediationAllowed")
	}
	return n.condition(readyCondition)
}

func isNormal(c Condition) bool {
	if negativePolarity[c.Type] {
		return c.Status == "False"
	}
	return c.Status == "True"
}

// findFirstFailing walks the tree in print order and names the first object whose row condition
// is not in its normal state; failing that, the first abnormal condition of the Cluster itself.
func findFirstFailing(root *Node, v1 bool) string {
	rowCond := func(n *Node) *Condition {
		if v1 {
			return n.v1beta1Ready()
		}
		return n.rowCondition()
	}
	if c := rowCond(root); c != nil && c.Status == "True" {
		return ""
	}
	var found string
	var walk func(n *Node)
	walk = func(n *Node) {
		for _, c := range n.Children {
			if found != "" {
				return
			}
			if c.Missing {
				found = fmt.Sprintf("%s %s: not found", c.Kind, c.objectRef())
				return
			}
			if cond := rowCond(c); cond != nil && c.Category != CategoryVirtual && !isNormal(*cond) {
				name := c.Kind + " " + c.objectRef()
				if c.Category == CategoryGroup {
					name = fmt.Sprintf("%s %s/%s (and %d more)", strings.TrimSuffix(c.Kind, "Group"), c.Namespace, c.Group.Items[0], len(c.Group.Items)-1)
				}
				found = fmt.Sprintf("%s %s=%s", name, cond.Type, cond.Status)
				if cond.Reason != "" {
					found += " (" + cond.Reason + ")"
				}
				return
			}
			walk(c)
		}
	}
	walk(root)
	if found != "" {
		return found
	}
	conds := root.Conditions
	if v1 {
		conds = sortedByType(root.V1Beta1Conditions)
	}
	skip := map[string]bool{availableCondition: true, readyCondition: true}
	for _, c := range conds {
		if !skip[c.Type] && !isNormal(c) {
			s := fmt.Sprintf("Cluster condition %s=%s", c.Type, c.Status)
			if c.Reason != "" {
				s += " (" + c.Reason + ")"
			}
			return s
		}
	}
	return ""
}
