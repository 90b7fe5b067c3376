package fleetupgrade

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/versions"
)

// Labels the Cluster API controllers put on Machines, telling who owns them.
const (
	controlPlaneMachineLabel = "cluster.x-k8s.io/control-plane"
	deploymentNameLabel      = "cluster.x-k8s.io/deployment-name"
	poolNameLabel            = "cluster.x-k8s.io/pool-name"
)

// ClusterState is what the fleet apply reads of one cluster to tell whether a step is done: the
// Cluster, its control plane, its MachineDeployments and MachinePools, and its Machines.
type ClusterState struct {
	Cluster      *unstructured.Unstructured
	ControlPlane *unstructured.Unstructured
	// Workers are the cluster's MachineDeployments and MachinePools.
	Workers  []unstructured.Unstructured
	Machines []unstructured.Unstructured
}

// Topology tells whether the cluster has a managed topology (spec.topology).
func (s ClusterState) Topology() bool {
	t, ok, _ := unstructured.NestedMap(s.Cluster.Object, "spec", "topology")
	return ok && t != nil
}

// ControlPlaneVersion is the version the cluster asks of its control plane: spec.topology.version
// for a managed topology, else the control plane's spec.version.
func (s ClusterState) ControlPlaneVersion() string {
	if s.Topology() {
		v, _, _ := unstructured.NestedString(s.Cluster.Object, "spec", "topology", "version")
		return v
	}
	if s.ControlPlane == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(s.ControlPlane.Object, "spec", "version")
	return v
}

// WorkerVersions are the template versions of the MachineDeployments and MachinePools.
func (s ClusterState) WorkerVersions() []string {
	var out []string
	for i := range s.Workers {
		if v := workerVersion(&s.Workers[i]); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func workerVersion(u *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "version")
	return v
}

// StepDone tells whether the cluster has finished getting to version for component: the wanted
// version is set where it belongs (spec.topology.version, the control plane's spec.version, or
// every MachineDeployment/MachinePool template), and Pending finds nothing left to do. When it
// is not done it says why, one reason a line, as the controllers report it.
func StepDone(s ClusterState, component, version string) (bool, []string) {
	var why []string
	if s.Topology() {
		if v := s.ControlPlaneVersion(); v != version {
			why = append(why, fmt.Sprintf("Cluster spec.topology.version is %s, not %s", orNone(v), version))
		}
	}
	if s.Topology() || component == ControlPlane {
		if s.ControlPlane == nil {
			why = append(why, "the control plane object was not found")
		} else if v, _, _ := unstructured.NestedString(s.ControlPlane.Object, "spec", "version"); v != version {
			why = append(why, fmt.Sprintf("%s spec.version is %s, not %s yet", objName(s.ControlPlane), orNone(v), version))
		}
	}
	if s.Topology() || component == Workers {
		for i := range s.Workers {
			if v := workerVersion(&s.Workers[i]); v != version {
				why = append(why, fmt.Sprintf("%s template version is %s, not %s yet", objName(&s.Workers[i]), orNone(v), version))
			}
		}
	}
	why = append(why, Pending(s)...)
	return len(why) == 0, why
}

// RolloutUnderWay names the version change the controllers are still rolling out, as an
// interrupted run leaves it: the control plane when it (spec or reported version) or one of its
// Machines is not at the version the cluster asks of it, else the workers when a
// MachineDeployment/MachinePool template (for a topology: not yet at the topology's version) or
// one of its Machines is not. Empty when every version asked is rolled out; other unfinished
// work (a scale-up, a Cluster not Available) is not a version change.
func RolloutUnderWay(s ClusterState) (component, version string) {
	cpWant := s.ControlPlaneVersion()
	if cp := s.ControlPlane; cp != nil && cpWant != "" {
		spec, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
		got, _, _ := unstructured.NestedString(cp.Object, "status", "version")
		if spec != cpWant || got != cpWant {
			return ControlPlane, cpWant
		}
	}
	workers := map[string]string{}
	for i := range s.Workers {
		w := &s.Workers[i]
		v := workerVersion(w)
		if s.Topology() && cpWant != "" && v != cpWant {
			return Workers, cpWant
		}
		workers[w.GetKind()+"/"+w.GetName()] = v
	}
	var rolling string
	for i := range s.Machines {
		m := &s.Machines[i]
		got, _, _ := unstructured.NestedString(m.Object, "spec", "version")
		l := m.GetLabels()
		if _, ok := l[controlPlaneMachineLabel]; ok {
			if s.ControlPlane != nil && cpWant != "" && got != cpWant {
				return ControlPlane, cpWant
			}
			continue
		}
		want, known := "", false
		if d := l[deploymentNameLabel]; d != "" {
			want, known = workers["MachineDeployment/"+d]
		} else if p := l[poolNameLabel]; p != "" {
			want, known = workers["MachinePool/"+p]
		}
		if known && want != "" && got != want {
			rolling = want
		}
	}
	if rolling != "" {
		return Workers, rolling
	}
	return "", ""
}

// Pending lists what the controllers have not finished for the versions already set: the
// Cluster is not Available (or, with a managed topology, the topology controller has not
// reconciled it), an object has not observed its latest spec, a control plane or worker set
// reports another version or fewer up-to-date replicas than wanted, a Machine runs another
// version than its owner asks, is not UpToDate, or is being deleted. Empty: settled.
func Pending(s ClusterState) []string {
	p := pendingParts(s)
	why := append(p.cluster, p.controlPlane...)
	why = append(why, p.workers...)
	return append(why, p.machines...)
}

// pending is Pending's reasons by who has to act: the Cluster, the control plane object, the
// worker objects, and the Machines (sorted by name, each tagged with its owner's role).
type pending struct {
	cluster, controlPlane, workers []string
	machines                       []string
	// cpMachines and workerMachines count the Machine reasons by owner.
	cpMachines, workerMachines int
}

func (p pending) controlPlaneSettled() bool { return len(p.controlPlane) == 0 && p.cpMachines == 0 }
func (p pending) workersSettled() bool      { return len(p.workers) == 0 && p.workerMachines == 0 }

func pendingParts(s ClusterState) pending {
	var p pending
	if s.Cluster.GetDeletionTimestamp() != nil {
		p.cluster = append(p.cluster, "the Cluster is being deleted")
	}
	if st, msg := condition(s.Cluster, "Available"); st != "True" {
		p.cluster = append(p.cluster, "Cluster "+conditionLine("Available", st, msg))
	}
	if s.Topology() {
		// The topology controller reports here the upgrade it still has to propagate.
		if st, msg := condition(s.Cluster, "TopologyReconciled"); st != "True" {
			p.cluster = append(p.cluster, "Cluster "+conditionLine("TopologyReconciled", st, msg))
		}
	}
	cpVersion := ""
	if cp := s.ControlPlane; cp != nil {
		cpVersion, _, _ = unstructured.NestedString(cp.Object, "spec", "version")
		p.controlPlane = append(p.controlPlane, generationLag(cp)...)
		if got, _, _ := unstructured.NestedString(cp.Object, "status", "version"); got != cpVersion {
			p.controlPlane = append(p.controlPlane, fmt.Sprintf("%s reports version %s, wants %s", objName(cp), orNone(got), cpVersion))
		}
		p.controlPlane = append(p.controlPlane, replicaLag(cp)...)
	}
	workerVersions := map[string]string{}
	for i := range s.Workers {
		w := &s.Workers[i]
		workerVersions[w.GetKind()+"/"+w.GetName()] = workerVersion(w)
		p.workers = append(p.workers, generationLag(w)...)
		p.workers = append(p.workers, replicaLag(w)...)
	}
	machines := append([]unstructured.Unstructured(nil), s.Machines...)
	sort.Slice(machines, func(i, j int) bool { return machines[i].GetName() < machines[j].GetName() })
	for i := range machines {
		m := &machines[i]
		name := "Machine " + m.GetName()
		_, isCP := m.GetLabels()[controlPlaneMachineLabel]
		var why []string
		want, known := "", false
		l := m.GetLabels()
		switch {
		case isCP && s.ControlPlane != nil:
			want, known = cpVersion, true
		case l[deploymentNameLabel] != "":
			want, known = workerVersions["MachineDeployment/"+l[deploymentNameLabel]]
		case l[poolNameLabel] != "":
			want, known = workerVersions["MachinePool/"+l[poolNameLabel]]
		}
		if m.GetDeletionTimestamp() != nil {
			why = append(why, name+" is being deleted")
		} else {
			if got, _, _ := unstructured.NestedString(m.Object, "spec", "version"); known && got != want {
				why = append(why, fmt.Sprintf("%s runs %s, wants %s", name, orNone(got), want))
			}
			if st, msg := condition(m, "UpToDate"); st != "True" {
				why = append(why, name+" "+conditionLine("UpToDate", st, msg))
			}
		}
		p.machines = append(p.machines, why...)
		if isCP {
			p.cpMachines += len(why)
		} else {
			p.workerMachines += len(why)
		}
	}
	return p
}

// condition reads a v1beta2 condition (status.conditions) as the controllers write it.
func condition(u *unstructured.Unstructured, typ string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		st, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		if msg == "" {
			msg, _ = m["reason"].(string)
		}
		return st, msg
	}
	return "", ""
}

func conditionLine(typ, status, msg string) string {
	if status == "" {
		return typ + " is not reported yet"
	}
	line := typ + " is " + status
	if msg != "" {
		line += ": " + msg
	}
	return line
}

// generationLag says when a controller has not yet observed the object's latest spec.
func generationLag(u *unstructured.Unstructured) []string {
	og, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if ok && og < u.GetGeneration() {
		return []string{fmt.Sprintf("%s has not observed its latest spec yet (generation %d, observed %d)", objName(u), u.GetGeneration(), og)}
	}
	return nil
}

// replicaLag compares the wanted replicas with those reported and those up to date (the
// v1beta2 status fields of the control-plane contract, MachineDeployments and MachinePools).
func replicaLag(u *unstructured.Unstructured) []string {
	want, hasWant, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
	have, hasHave, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
	upToDate, hasUp, _ := unstructured.NestedInt64(u.Object, "status", "upToDateReplicas")
	var why []string
	if hasWant && have != want {
		why = append(why, fmt.Sprintf("%s has %d replicas, wants %d", objName(u), have, want))
	}
	if hasHave || hasWant {
		total := have
		if hasWant {
			total = max(want, have)
		}
		if !hasUp || upToDate < total {
			why = append(why, fmt.Sprintf("%s has %d of %d replicas up to date", objName(u), upToDate, total))
		}
	}
	return why
}

func objName(u *unstructured.Unstructured) string { return u.GetKind() + " " + u.GetName() }

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// UpgradePlan is the plan the topology controller computed for a managed-topology cluster: the
// versions it has still to apply to the control plane (status.controlPlane.upgradePlan) and to
// the workers (status.workers.upgradePlan). It recomputes them while it walks a chained upgrade;
// a version leaves the list once it is applied. Both are empty when no upgrade is in progress.
func (s ClusterState) UpgradePlan() (controlPlane, workers []string) {
	return planVersions(s.Cluster, "controlPlane"), planVersions(s.Cluster, "workers")
}

func planVersions(cl *unstructured.Unstructured, part string) []string {
	items, _, _ := unstructured.NestedSlice(cl.Object, "status", part, "upgradePlan")
	var out []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if v, _ := m["version"].(string); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// ChainTracker follows a managed-topology cluster while the topology controller walks the
// upgrade plan it computed (a chained upgrade: the ClusterClass lists spec.kubernetesVersions and
// spec.topology.version was set to a target several minors up). Every version the control plane
// or the workers go through is one step; a step is done when the controllers have rolled it out
// (the object reports it, every replica and Machine up to date), or when the topology controller
// has already applied a later version, which it does only after the step finished. A step's
// seconds run from the end of the previous step (or the start of tracking) to the observation
// that it was done.
type ChainTracker struct {
	last                time.Time
	baseCP, baseWorkers string
	steps               []chainStep
	planCP, planWorkers []string
}

// chainStep is a step and whether its version was seen applied to the objects.
type chainStep struct {
	FleetStepReport
	started bool
}

// ChainUpdate is what one observation changed.
type ChainUpdate struct {
	// Done are the steps found finished since the previous observation, in order.
	Done []FleetStepReport
	// PlanChanged is set when the topology controller's plan differs from the last one seen.
	PlanChanged                   bool
	ControlPlanePlan, WorkersPlan []string
}

// NewChainTracker starts tracking from the cluster's state at now. Versions already rolled out
// are the baseline; a version still rolling out is tracked as the first step.
func NewChainTracker(s ClusterState, now time.Time) *ChainTracker {
	p := pendingParts(s)
	t := &ChainTracker{last: now}
	if s.ControlPlane != nil {
		t.baseCP, _, _ = unstructured.NestedString(s.ControlPlane.Object, "spec", "version")
		if !p.controlPlaneSettled() {
			t.baseCP, _, _ = unstructured.NestedString(s.ControlPlane.Object, "status", "version")
		}
	}
	t.baseWorkers = oldestVersion(s.WorkerVersions())
	if !p.workersSettled() {
		var running []string
		for i := range s.Machines {
			if _, cp := s.Machines[i].GetLabels()[controlPlaneMachineLabel]; !cp {
				v, _, _ := unstructured.NestedString(s.Machines[i].Object, "spec", "version")
				running = append(running, v)
			}
		}
		if v := oldestVersion(running); v != "" {
			t.baseWorkers = v
		}
	}
	return t
}

// Observe reads one state of the cluster at now.
func (t *ChainTracker) Observe(s ClusterState, now time.Time) ChainUpdate {
	p := pendingParts(s)
	cpPlan, wPlan := s.UpgradePlan()
	cpV := ""
	if s.ControlPlane != nil {
		cpV, _, _ = unstructured.NestedString(s.ControlPlane.Object, "spec", "version")
	}
	wVersions := s.WorkerVersions()
	minW := oldestVersion(wVersions)

	// The steps: every version the objects were given since tracking began, then what the
	// controller's latest plan still lists.
	if cpV != "" && compareVersions(cpV, t.baseCP) > 0 {
		t.ensure(ControlPlane, cpV)
	}
	for _, v := range cpPlan {
		t.ensure(ControlPlane, v)
	}
	for _, v := range wVersions {
		if compareVersions(v, t.baseWorkers) > 0 {
			t.ensure(Workers, v)
		}
	}
	for _, v := range wPlan {
		t.ensure(Workers, v)
	}
	sort.SliceStable(t.steps, func(i, j int) bool {
		if c := compareVersions(t.steps[i].Version, t.steps[j].Version); c != 0 {
			return c < 0
		}
		return t.steps[i].Component == ControlPlane && t.steps[j].Component == Workers
	})

	var u ChainUpdate
	kept := t.steps[:0]
	for _, st := range t.steps {
		var current, done bool
		if st.Component == ControlPlane {
			current = st.Version == cpV
			done = current && p.controlPlaneSettled()
			// The controller applies the next version only once this one rolled out.
			done = done || (st.started && compareVersions(cpV, st.Version) > 0)
		} else {
			current = slices.Contains(wVersions, st.Version)
			done = allEqual(wVersions, st.Version) && p.workersSettled()
			done = done || (st.started && compareVersions(minW, st.Version) > 0)
		}
		st.started = st.started || current
		planned := slices.Contains(cpPlan, st.Version)
		if st.Component == Workers {
			planned = slices.Contains(wPlan, st.Version)
		}
		if !st.Done && done {
			st.Done = true
			st.Seconds = float64(now.Sub(t.last).Milliseconds()) / 1000
			t.last = now
			u.Done = append(u.Done, st.FleetStepReport)
		}
		// A step never started that the recomputed plan no longer lists is dropped (the
		// ClusterClass's versions changed under the upgrade).
		if st.Done || st.started || planned {
			kept = append(kept, st)
		}
	}
	t.steps = kept
	u.ControlPlanePlan, u.WorkersPlan = cpPlan, wPlan
	u.PlanChanged = !slices.Equal(cpPlan, t.planCP) || !slices.Equal(wPlan, t.planWorkers)
	t.planCP, t.planWorkers = cpPlan, wPlan
	return u
}

// Steps are the steps known so far: those done with their seconds, then those still to come.
func (t *ChainTracker) Steps() []FleetStepReport {
	out := make([]FleetStepReport, len(t.steps))
	for i, st := range t.steps {
		out[i] = st.FleetStepReport
	}
	return out
}

func (t *ChainTracker) ensure(component, version string) {
	for _, st := range t.steps {
		if st.Component == component && st.Version == version {
			return
		}
	}
	t.steps = append(t.steps, chainStep{FleetStepReport: FleetStepReport{Component: component, Version: version}})
}

// compareVersions orders two Kubernetes versions; one that does not parse sorts first, and ""
// (nothing known) before any version.
func compareVersions(a, b string) int {
	va, ea := versions.Parse(a)
	vb, eb := versions.Parse(b)
	switch {
	case ea != nil && eb != nil:
		return strings.Compare(a, b)
	case ea != nil:
		return -1
	case eb != nil:
		return 1
	}
	return va.Compare(vb)
}

func oldestVersion(vs []string) string {
	out := ""
	for _, v := range vs {
		if out == "" || compareVersions(v, out) < 0 {
			out = v
		}
	}
	return out
}

func allEqual(vs []string, v string) bool {
	for _, x := range vs {
		if x != v {
			return false
		}
	}
	return len(vs) > 0
}
