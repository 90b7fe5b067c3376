package describe

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/contract"
)

// Build turns a snapshot into the cluster's tree, applying opts' presentation (conditions shown,
// machine sets, templates, resource sets, echo, grouping, v1beta1). It reads nothing: the same
// snapshot always gives the same tree.
func Build(s *Snapshot, opts ClusterRequest) (*Tree, error) {
	if s == nil || s.Cluster == nil {
		return nil, errors.New("describe: empty snapshot")
	}
	t := &treeBuilder{s: s, opts: opts, b: &builder{opts: opts}, ns: s.Cluster.GetNamespace(), placed: map[string]bool{}, refs: map[objKey]Referenced{}}
	for _, r := range s.Referenced {
		t.refs[objKey{gk: schema.GroupKind{Group: r.Group, Kind: r.Kind}, namespace: r.Namespace, name: r.Name}] = r
	}
	root := objectNode(s.Cluster, CategoryCluster, "")
	root.showConditions = matchShowConditions(root.Kind, root.Name, opts.ShowConditions)
	t.root = root
	t.b.seen(root)
	if r := readRef(s.Cluster.Object, t.ns, "spec", "infrastructureRef"); r.defined() {
		t.b.add(root, t.refNode(r, CategoryObject, "ClusterInfrastructure"))
	}
	if opts.ShowResourceSets && s.ClusterResourceSetBinding != nil {
		t.addResourceSets()
	}
	t.addControlPlane()
	t.addMachineDeployments()
	t.addMachinePools()
	t.addUnplacedMachines()
	t.addHealthChecks(root)
	if err := t.b.checkShowConditions(root.objectRef()); err != nil {
		return nil, err
	}
	finishGroups(root)
	sortTree(root)
	root.FirstFailing = findFirstFailing(root, opts.V1Beta1)
	return &Tree{Root: root, V1Beta1: opts.V1Beta1, ServedVersion: s.ServedVersion, Unread: s.Unread}, nil
}

// treeBuilder is one Build: the snapshot, the tree so far and which machines have a parent.
type treeBuilder struct {
	s       *Snapshot
	opts    ClusterRequest
	b       *builder
	ns      string
	root    *Node
	workers *Node
	placed  map[string]bool
	refs    map[objKey]Referenced
}

// refNode is the row of a referenced object, or a missing row saying why it could not be read.
func (t *treeBuilder) refNode(r ref, cat Category, role string) *Node {
	f, ok := t.refs[keyOf(r)]
	if ok && f.Object != nil {
		return objectNode(f.Object, cat, role)
	}
	n := &Node{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Category: cat, Role: role, Missing: true}
	if r.Group != "" {
		n.APIVersion = schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
	}
	if ok && f.Error != "" {
		n.Error = f.Error
	} else {
		n.Error = "not found"
	}
	return n
}

func (t *treeBuilder) addResourceSets() {
	crsByName := map[string]*unstructured.Unstructured{}
	for i := range t.s.ClusterResourceSets {
		crsByName[t.s.ClusterResourceSets[i].GetName()] = &t.s.ClusterResourceSets[i]
	}
	group := &Node{Kind: "ClusterResourceSetGroup", Namespace: t.ns, Name: "ClusterResourceSets", Category: CategoryVirtual}
	t.b.add(t.root, group)
	bindings, _ := nestedSlice(t.s.ClusterResourceSetBinding.Object, "spec", "bindings")
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
			n = &Node{Kind: "ClusterResourceSet", Namespace: t.ns, Name: name, Category: CategoryReference, Missing: true, Error: "not found"}
		}
		t.b.add(group, n)
	}
}

// addMachine adds a machine with its infrastructure and bootstrap objects (hidden when they only
// echo the machine's state).
func (t *treeBuilder) addMachine(parent *Node, m *unstructured.Unstructured) {
	t.placed[m.GetName()] = true
	n := objectNode(m, CategoryMachine, "")
	if !t.b.add(parent, n) {
		return
	}
	if r := readRef(m.Object, t.ns, "spec", "infrastructureRef"); r.defined() {
		in := t.refNode(r, CategoryObject, "MachineInfrastructure")
		in.noEcho = true
		t.b.add(n, in)
	}
	if r := readRef(m.Object, t.ns, "spec", "bootstrap", "configRef"); r.defined() {
		bn := t.refNode(r, CategoryObject, "BootstrapConfig")
		bn.noEcho = true
		t.b.add(n, bn)
	}
}

// addTemplates adds the Templates heading with the given template references (ShowTemplates).
func (t *treeBuilder) addTemplates(parent *Node, refs map[string]ref) {
	if !t.opts.ShowTemplates {
		return
	}
	var tn *Node
	for _, role := range []string{"BootstrapConfigTemplate", "MachineInfrastructureTemplate"} {
		r, ok := refs[role]
		if !ok || !r.defined() {
			continue
		}
		if tn == nil {
			tn = &Node{Kind: "TemplateGroup", Namespace: t.ns, Name: "Templates", Category: CategoryVirtual, zOrder: 1}
			t.b.add(parent, tn)
		}
		n := &Node{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Category: CategoryReference, Role: role}
		if r.Group != "" {
			n.APIVersion = schema.GroupVersion{Group: r.Group, Version: r.Version}.String()
		}
		t.b.add(tn, n)
	}
}

func (t *treeBuilder) addControlPlane() {
	cpRef := readRef(t.s.Cluster.Object, t.ns, "spec", "controlPlaneRef")
	if !cpRef.defined() {
		return
	}
	cpNode := t.refNode(cpRef, CategoryControlPlane, "ControlPlane")
	cpNode.groupingParent = true
	t.b.add(t.root, cpNode)
	if f := t.refs[keyOf(cpRef)]; f.Object != nil {
		r := readRef(f.Object.Object, t.ns, "spec", "machineTemplate", "spec", "infrastructureRef")
		if !r.defined() {
			r = readRef(f.Object.Object, t.ns, "spec", "machineTemplate", "infrastructureRef")
		}
		t.addTemplates(cpNode, map[string]ref{"MachineInfrastructureTemplate": r})
	}
	for i := range t.s.Machines {
		if _, ok := t.s.Machines[i].GetLabels()[controlPlaneLabel]; ok {
			t.addMachine(cpNode, &t.s.Machines[i])
		}
	}
}

// workerGroup is the Workers heading, added on first use.
func (t *treeBuilder) workerGroup() *Node {
	if t.workers == nil {
		t.workers = &Node{Kind: "WorkerGroup", Namespace: t.ns, Name: "Workers", Category: CategoryVirtual}
		t.b.add(t.root, t.workers)
	}
	return t.workers
}

// addMachinesOf adds the machines controlled by the given core kind and name that have no
// parent yet.
func (t *treeBuilder) addMachinesOf(parent *Node, kind, name string) {
	for k := range t.s.Machines {
		m := &t.s.Machines[k]
		if !t.placed[m.GetName()] && controlledBy(m, contract.Group, kind, name) {
			t.addMachine(parent, m)
		}
	}
}

func (t *treeBuilder) addMachineDeployments() {
	for i := range t.s.MachineDeployments {
		md := &t.s.MachineDeployments[i]
		workers := t.workerGroup()
		mdNode := objectNode(md, CategoryMachineDeployment, "")
		mdNode.groupingParent = !t.opts.ShowMachineSets
		t.b.add(workers, mdNode)
		t.addTemplates(mdNode, map[string]ref{
			"BootstrapConfigTemplate":       readRef(md.Object, t.ns, "spec", "template", "spec", "bootstrap", "configRef"),
			"MachineInfrastructureTemplate": readRef(md.Object, t.ns, "spec", "template", "spec", "infrastructureRef"),
		})
		for j := range t.s.MachineSets {
			ms := &t.s.MachineSets[j]
			if !controlledBy(ms, contract.Group, "MachineDeployment", md.GetName()) {
				continue
			}
			parent := mdNode
			if t.opts.ShowMachineSets {
				msNode := objectNode(ms, CategoryMachineSet, "")
				msNode.groupingParent = true
				t.b.add(mdNode, msNode)
				parent = msNode
			}
			t.addMachinesOf(parent, "MachineSet", ms.GetName())
		}
	}
}

func (t *treeBuilder) addMachinePools() {
	for i := range t.s.MachinePools {
		mp := &t.s.MachinePools[i]
		workers := t.workerGroup()
		mpNode := objectNode(mp, CategoryMachinePool, "")
		mpNode.groupingParent = true
		if t.b.add(workers, mpNode) {
			if r := readRef(mp.Object, t.ns, "spec", "template", "spec", "bootstrap", "configRef"); r.defined() {
				n := t.refNode(r, CategoryObject, "BootstrapConfig")
				n.noEcho = true
				t.b.add(mpNode, n)
			}
			if r := readRef(mp.Object, t.ns, "spec", "template", "spec", "infrastructureRef"); r.defined() {
				n := t.refNode(r, CategoryObject, "MachinePoolInfrastructure")
				n.noEcho = true
				t.b.add(mpNode, n)
			}
		}
		t.addMachinesOf(mpNode, "MachinePool", mp.GetName())
	}
}

// addUnplacedMachines puts machines no control plane, machine set or pool owns under Other.
func (t *treeBuilder) addUnplacedMachines() {
	if len(t.placed) >= len(t.s.Machines) {
		return
	}
	other := &Node{Kind: "OtherGroup", Namespace: t.ns, Name: "Other", Category: CategoryVirtual}
	t.b.add(t.workerGroup(), other)
	for i := range t.s.Machines {
		if !t.placed[t.s.Machines[i].GetName()] {
			t.addMachine(other, &t.s.Machines[i])
		}
	}
}

// addHealthChecks adds the MachineHealthChecks of the cluster, with the machines each selects and
// which of those it sees as unhealthy (HealthCheckSucceeded=False).
func (t *treeBuilder) addHealthChecks(root *Node) {
	b, mhcs, machines := t.b, t.s.MachineHealthChecks, t.s.Machines
	var nodes []*Node
	for i := range mhcs {
		mhc := &mhcs[i]
		if nestedString(mhc.Object, "spec", "clusterName") != t.s.Cluster.GetName() {
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
