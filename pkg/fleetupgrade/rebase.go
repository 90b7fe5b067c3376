package fleetupgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Rebase is a ClusterClass rebase (`capctl topology apply`): the planned clusters'
// spec.topology.classRef moves from one ClusterClass to another of the same namespace, wave by
// wave through the engine of the Kubernetes upgrade. Both classes exist before the run (topology
// apply creates the new one); only the clusters listed are selected.
type Rebase struct {
	// Namespace is the classes' namespace; From is the class the clusters use, To the one they
	// move to.
	Namespace, From, To string
	// Clusters are the clusters to rebase, as the plan saw them.
	Clusters []RebaseCluster
}

// RebaseCluster is one planned cluster of a rebase: who it was when planned, and what the plan
// predicted replaces machines.
type RebaseCluster struct {
	// ManagementCluster is the context ("" for one management cluster).
	ManagementCluster string `json:"managementCluster,omitempty"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	// UID and Generation of the Cluster when planned: a cluster recreated or whose spec changed
	// since is refused (drift), unless it is on the new class already (a resumed run). A
	// Generation of 0 checks no generation (a rollback: the rebase itself changed it).
	UID        string `json:"uid"`
	Generation int64  `json:"generation"`
	// RollsOut are the parts the plan predicted replace their machines: "control plane" and
	// "MachineDeployment NAME" (the topology's name).
	RollsOut []string `json:"rollsOut"`
}

// ResultRebased is a cluster's result when this run moved it onto the new class.
const ResultRebased = "Rebased"

// Step component of a rebase.
const ClassComponent = "ClusterClass"

func (r Rebase) check() error {
	switch {
	case r.From == "" || r.To == "":
		return errors.New("a ClusterClass rebase needs the class the clusters use and the one they move to")
	case r.From == r.To:
		return fmt.Errorf("the clusters use ClusterClass %s already: the new class needs another name", r.To)
	case len(r.Clusters) == 0:
		return errors.New("the plan has no cluster to rebase")
	}
	return nil
}

// rebase is the fleetChange of a Rebase.
type rebase struct {
	Rebase
	byRef map[string]RebaseCluster
}

func (r Rebase) resolve() (rebase, error) {
	if err := r.check(); err != nil {
		return rebase{}, err
	}
	rb := rebase{Rebase: r, byRef: map[string]RebaseCluster{}}
	for _, c := range r.Clusters {
		rb.byRef[clusterRef(c.ManagementCluster, c.Namespace, c.Name)] = c
	}
	return rb, nil
}

func (r rebase) text() string { return r.Namespace + "/" + r.From + " -> " + r.To }

func (r rebase) head(plan *FleetPlan) { plan.ClassRebase = r.text() }

// selects: a rebase moves only the clusters its plan computed.
func (r rebase) selects(info ClusterInfo) bool {
	_, ok := r.byRef[info.ref()]
	return ok
}

// drift says how the cluster differs from the plan, or "": recreated, on another class, or its
// spec changed (its generation). A cluster on the new class already is as planned (a resumed run
// moved it, and the move itself changes the generation).
func (r rebase) drift(info ClusterInfo) string {
	rc, ok := r.byRef[info.ref()]
	switch {
	case !ok:
		return ""
	case info.UID != rc.UID:
		return fmt.Sprintf("the Cluster was recreated since the plan (uid %s, planned %s): plan again", info.UID, rc.UID)
	case info.ClusterClass == r.Namespace+"/"+r.To:
		return ""
	case info.ClusterClass != r.Namespace+"/"+r.From:
		return fmt.Sprintf("the Cluster uses ClusterClass %s, not %s/%s as planned: plan again", orNone(info.ClusterClass), r.Namespace, r.From)
	case rc.Generation != 0 && info.Generation != rc.Generation:
		return fmt.Sprintf("the Cluster's spec changed since the plan (generation %d, planned at %d): plan again", info.Generation, rc.Generation)
	}
	return ""
}

// Drift is every difference between the plan and the clusters read (infos, the whole fleet of
// the management clusters): a planned cluster gone, recreated, on another class or changed.
func (r Rebase) Drift(infos []ClusterInfo) []string {
	rb, err := r.resolve()
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[string]bool{}
	var out []string
	for _, info := range infos {
		if !rb.selects(info) {
			continue
		}
		seen[info.ref()] = true
		if d := rb.drift(info); d != "" {
			out = append(out, fmt.Sprintf("cluster %s: %s", info.ref(), d))
		}
	}
	for _, c := range r.Clusters {
		if ref := clusterRef(c.ManagementCluster, c.Namespace, c.Name); !seen[ref] {
			out = append(out, fmt.Sprintf("cluster %s: not found (deleted since the plan?): plan again", ref))
		}
	}
	sort.Strings(out)
	return out
}

func (r rebase) planCluster(info ClusterInfo) (ClusterUpgrade, string) {
	cu := ClusterUpgrade{ManagementCluster: info.ManagementCluster, Namespace: info.Namespace, Name: info.Name, ClusterClass: info.ClusterClass,
		ControlPlaneVersion: info.ControlPlaneVersion, WorkersVersion: oldestVersion(info.WorkerVersions),
		UID: info.UID, Generation: info.Generation, ResourceVersion: info.ResourceVersion,
		Steps: []UpgradeStep{{Component: ClassComponent, Version: r.To}}}
	if cu.WorkersVersion == "" {
		cu.WorkersVersion = info.ControlPlaneVersion
	}
	return cu, r.drift(info)
}

func (r rebase) goal() string { return "on ClusterClass " + r.To }

// preflight: a rebase sets no version; upstream admission (the Cluster webhook, through the
// first patch's dry run) checks the two classes are compatible.
func (r rebase) preflight(context.Context, []FleetMember, []FleetWave) (*FleetPreflight, []string, error) {
	return &FleetPreflight{Providers: []ProviderSupport{}, Notes: []string{"a ClusterClass rebase sets no version: the providers' supported Kubernetes versions are not checked"}}, nil, nil
}

func (r rebase) step() string { return "classRef " + r.To }

func (r rebase) firstPatch(a *fleetApplier, s ClusterState, _ ClusterInfo, cu ClusterUpgrade) (string, func(context.Context) error) {
	if r.onNew(s) {
		return "", nil
	}
	return r.step(), func(ctx context.Context) error { return r.move(ctx, a, cu) }
}

func (r rebase) onNew(s ClusterState) bool {
	name, _, _ := unstructured.NestedString(s.Cluster.Object, "spec", "topology", "classRef", "name")
	return name == r.To
}

// move patches the Cluster's classRef from the old class to the new one. The patch tests the old
// name and the generation the plan saw, so a cluster moved meanwhile (by a second run) or changed
// since it was read is not written: the API server refuses the patch.
func (r rebase) move(ctx context.Context, a *fleetApplier, cu ClusterUpgrade) error {
	gen := r.byRef[cu.Ref()].Generation
	if gen == 0 {
		gen = cu.Generation // as read by this run's preflight
	}
	ops := []map[string]any{
		{"op": "test", "path": "/spec/topology/classRef/name", "value": r.From},
		{"op": "test", "path": "/metadata/generation", "value": gen},
		{"op": "replace", "path": "/spec/topology/classRef/name", "value": r.To},
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capiV1beta2.WithKind("Cluster"))
	cl.SetNamespace(cu.Namespace)
	cl.SetName(cu.Name)
	var opts []client.PatchOption
	if a.req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	if err := a.clients[cu.ManagementCluster].Patch(ctx, cl, client.RawPatch(types.JSONPatchType, data), opts...); err != nil {
		return fmt.Errorf("moving Cluster %s/%s to ClusterClass %s: %w", cu.Namespace, cu.Name, r.To, err)
	}
	return nil
}

// done: on the new class, the topology controller reconciled the Cluster's latest spec, and
// Pending finds nothing (Available, every object observed, every Machine UpToDate).
func (r rebase) done(s ClusterState) (bool, []string) {
	var why []string
	if !r.onNew(s) {
		why = append(why, "the Cluster is not on ClusterClass "+r.To)
	}
	why = append(why, topologyLag(s.Cluster)...)
	why = append(why, Pending(s)...)
	return len(why) == 0, why
}

// topologyLag says when the topology controller has not reconciled the Cluster's latest spec
// (its TopologyReconciled condition is older than the generation).
func topologyLag(cl *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(cl.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "TopologyReconciled" {
			continue
		}
		og, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		if og < cl.GetGeneration() {
			return []string{fmt.Sprintf("the topology controller has not reconciled the Cluster's latest spec yet (generation %d, TopologyReconciled observed %d)", cl.GetGeneration(), og)}
		}
		return nil
	}
	return []string{"the Cluster reports no TopologyReconciled condition yet"}
}

// replacedSince are the parts whose Machines were all created at or after t: "control plane" and
// "MachineDeployment NAME" (the topology's name, from the MachineDeployment's label).
func replacedSince(s ClusterState, t time.Time) []string {
	type part struct{ all, newer int }
	parts := map[string]*part{}
	topo := map[string]string{}
	for i := range s.Workers {
		w := &s.Workers[i]
		if w.GetKind() == "MachineDeployment" {
			if n := w.GetLabels()[topologyMDLabel]; n != "" {
				topo[w.GetName()] = n
			}
		}
	}
	for i := range s.Machines {
		m := &s.Machines[i]
		l := m.GetLabels()
		key := ""
		if _, cp := l[controlPlaneMachineLabel]; cp {
			key = "control plane"
		} else if md := l[deploymentNameLabel]; md != "" {
			if n := topo[md]; n != "" {
				md = n
			}
			key = "MachineDeployment " + md
		} else {
			continue
		}
		p := parts[key]
		if p == nil {
			p = &part{}
			parts[key] = p
		}
		p.all++
		if !m.GetCreationTimestamp().Time.Before(t) {
			p.newer++
		}
	}
	var out []string
	for k, p := range parts {
		if p.all > 0 && p.newer == p.all {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// topologyMDLabel names a MachineDeployment's topology (cluster.x-k8s.io/deployment-name is the
// object's own name).
const topologyMDLabel = "topology.cluster.x-k8s.io/deployment-name"

// runCluster rebases one cluster (runOnePatch): the Cluster is moved where it is not yet, and
// followed until the controllers have done what the new class asks; the step records which parts
// replaced their machines beside what the plan predicted.
func (r rebase) runCluster(cr *clusterRun) *FleetApplyFailure {
	rc := r.byRef[cr.cu.Ref()]
	return cr.runOnePatch(onePatch{
		step: FleetStepReport{Component: ClassComponent, Version: r.To, Predicted: rc.RollsOut}, name: r.step(),
		goal: r.goal(), result: ResultRebased, done: r.done,
		needed: func(s ClusterState) bool { return !r.onNew(s) },
		send: func(ctx context.Context) ([]string, error) {
			if err := r.move(ctx, cr.a, cr.cu); err != nil {
				return nil, err
			}
			return []string{"Cluster " + cr.cu.Name + " spec.topology.classRef.name"}, nil
		},
		sent:  func([]string) string { return "moved to ClusterClass " + r.To },
		asked: "on ClusterClass " + r.To + " already, waiting for the controllers",
		measured: func(st *FleetStepReport, begin time.Time) {
			// Only this run's move is measured: a resumed one cannot tell which Machines it
			// replaced.
			end, err := cr.a.readState(cr.ctx, cr.info, cr.cu)
			if err != nil {
				return
			}
			st.Replaced = replacedSince(end, begin.Add(-time.Second))
			if st.Replaced == nil {
				st.Replaced = []string{}
			}
			st.PredictionHeld = predictionHeld(rc.RollsOut, st.Replaced)
		},
	})
}

// replacedText says what replaced its machines, for the progress line.
func replacedText(replaced []string) string {
	if len(replaced) == 0 {
		return "no machines replaced"
	}
	return "replaced the machines of " + strings.Join(replaced, ", ")
}

// predictionHeld says whether what replaced its machines is what the plan predicted.
func predictionHeld(predicted, replaced []string) *bool {
	p := append([]string(nil), predicted...)
	sort.Strings(p)
	held := strings.Join(p, ",") == strings.Join(replaced, ",")
	return &held
}

func (r rebase) gateEnv() []string {
	return []string{"CAPCTL_CLUSTERCLASS=" + r.To, "CAPCTL_CLUSTERCLASS_FROM=" + r.From}
}

func (r rebase) complete(req *FleetApplyRequest) { rb := r.Rebase; req.Rebase = &rb }
