package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/rollout"
)

// Rotation is a fleet machine rotation (`capctl alpha rollout restart --all-clusters`): every
// Machine of the selected clusters' control planes and MachineDeployments created before After
// is replaced by the controllers, asked through rollout.after (the Cluster's topology fields on
// a managed topology, the objects' own otherwise), wave by wave through the engine of the
// Kubernetes upgrade.
type Rotation struct {
	// After is the rollout.after the rotation sets; zero: now. The time of an interrupted
	// rotation resumes it: what already asks it is not patched again, and Machines created
	// after it are not replaced again.
	After time.Time
}

// Step component of a rotation.
const Machines = "Machines"

// ResultRotated is a cluster's result when this run replaced its Machines.
const ResultRotated = "Rotated"

// resolve checks the rotation (pure but for the clock) and fixes its time, to the second, in
// UTC, as rollout.after holds it.
func (r Rotation) resolve(version string) (rotation, error) {
	if version != "" {
		return rotation{}, errors.New("a machine rotation keeps every version: --kubernetes-version cannot be given with it")
	}
	now := time.Now()
	at := r.After
	if at.IsZero() {
		at = now
	}
	if at.After(now.Add(time.Minute)) {
		return rotation{}, fmt.Errorf("--rollout-after %s is in the future: the controllers would wait until then; give the time of the rotation to resume, or none for now", rolloutAfterText(at))
	}
	return rotation{after: at.UTC().Truncate(time.Second)}, nil
}

// rotation is the fleetChange of a Rotation.
type rotation struct{ after time.Time }

func (r rotation) text() string { return rolloutAfterText(r.after) }

func (r rotation) head(plan *FleetPlan) { plan.RolloutAfter = r.text() }

// planCluster plans one step, the rotation; whether the cluster is rotated already is known
// only from its Machines, which its run reads.
func (r rotation) planCluster(info ClusterInfo) (ClusterUpgrade, string) {
	cu := ClusterUpgrade{ManagementCluster: info.ManagementCluster, Namespace: info.Namespace, Name: info.Name, ClusterClass: info.ClusterClass,
		ControlPlaneVersion: info.ControlPlaneVersion, WorkersVersion: oldestVersion(info.WorkerVersions),
		UID: info.UID, Generation: info.Generation, ResourceVersion: info.ResourceVersion,
		Steps: []UpgradeStep{{Component: Machines, Version: r.text()}}}
	if cu.WorkersVersion == "" {
		cu.WorkersVersion = info.ControlPlaneVersion
	}
	return cu, ""
}

func (r rotation) goal() string {
	return "rotated (every Machine created at or after " + r.text() + ")"
}

// preflight: a rotation sets no version, so the providers' supported versions are not checked.
func (r rotation) preflight(context.Context, []FleetMember, []FleetWave) (*FleetPreflight, []string, error) {
	return &FleetPreflight{Providers: []ProviderSupport{}, Notes: []string{"a machine rotation sets no version: the providers' supported Kubernetes versions are not checked"}}, nil, nil
}

func (r rotation) firstPatch(a *fleetApplier, s ClusterState, _ ClusterInfo, cu ClusterUpgrade) (string, func(context.Context) error) {
	if len(r.toReplace(s)) == 0 {
		return "", nil
	}
	return r.step(), func(ctx context.Context) error {
		_, err := r.restart(ctx, a, cu)
		return err
	}
}

func (r rotation) step() string { return "rollout.after " + r.text() }

// restart asks the rotation of one cluster (rollout.RestartCluster: the rules of `rollout
// restart`, through the topology where one manages the objects) and returns what it patched.
func (r rotation) restart(ctx context.Context, a *fleetApplier, cu ClusterUpgrade) ([]string, error) {
	c, ok := a.clients[cu.ManagementCluster].(*cluster.Client)
	if !ok {
		return nil, fmt.Errorf("management cluster %q: a rotation needs capctl's cluster client (discovery and the REST mapper)", cu.ManagementCluster)
	}
	targets, err := rollout.RestartCluster(ctx, c, rollout.ClusterRestart{Namespace: cu.Namespace, Name: cu.Name, At: r.after, DryRun: a.req.DryRun})
	var patched []string
	for _, t := range targets {
		what := t.Kind + " " + t.Name
		if t.Via != "" {
			what += " via " + t.Via
		}
		patched = append(patched, what)
	}
	return patched, err
}

func (r rotation) gateEnv() []string { return []string{"CAPCTL_ROLLOUT_AFTER=" + r.text()} }

func (r rotation) complete(req *FleetApplyRequest) { req.Rotation = &Rotation{After: r.after} }

// toReplace are the control plane and MachineDeployment Machines created before the rotation's
// time: what the controllers still have to replace.
func (r rotation) toReplace(s ClusterState) []string {
	var out []string
	for i := range s.Machines {
		m := &s.Machines[i]
		l := m.GetLabels()
		_, cp := l[controlPlaneMachineLabel]
		if !cp && l[deploymentNameLabel] == "" {
			continue // a MachinePool's: rollout.after does not replace it
		}
		if m.GetCreationTimestamp().Time.Before(r.after) {
			out = append(out, fmt.Sprintf("Machine %s was created at %s, before %s", m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339), r.text()))
		}
	}
	sort.Strings(out)
	return out
}

// done: no Machine to replace left and Pending finds nothing (the Cluster Available, every
// object observed, every Machine UpToDate).
func (r rotation) done(s ClusterState) (bool, []string) {
	why := append(r.toReplace(s), Pending(s)...)
	return len(why) == 0, why
}

// runCluster rotates one cluster (runOnePatch): rollout.after is asked where it is not yet, and
// the cluster is followed until the controllers replaced every Machine created before it.
func (r rotation) runCluster(cr *clusterRun) *FleetApplyFailure {
	return cr.runOnePatch(onePatch{
		step: FleetStepReport{Component: Machines, Version: r.text()}, name: r.step(),
		goal: r.goal(), result: ResultRotated, done: r.done,
		needed: func(s ClusterState) bool { return len(r.toReplace(s)) > 0 },
		send:   func(ctx context.Context) ([]string, error) { return r.restart(ctx, cr.a, cr.cu) },
		sent: func(patched []string) string {
			return fmt.Sprintf("set %s on %s", r.step(), strings.Join(patched, ", "))
		},
		asked: r.step() + " asked already, waiting for the controllers",
	})
}
