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

// runCluster rotates one cluster: done already, nothing is patched; else what is under way
// finishes first, then rollout.after is asked (skipped where it is asked already: a resumed
// run) and the cluster is followed until the controllers replaced every Machine.
func (r rotation) runCluster(cr *clusterRun) *FleetApplyFailure {
	s, err := cr.a.readState(cr.ctx, cr.info, cr.cu)
	if err != nil {
		return cr.stop("reading the cluster", err, nil)
	}
	if ok, _ := r.done(s); ok {
		cr.cr.Result = ResultUpToDate
		cr.a.req.Progress("  %s: already %s", cr.name, r.goal())
		return nil
	}
	if cr.a.req.DryRun {
		patched, err := r.restart(context.WithoutCancel(cr.ctx), cr.a, cr.cu)
		cr.cr.Steps = append(cr.cr.Steps, FleetStepReport{Component: Machines, Version: r.text(), Patched: patched, Done: err == nil})
		if err != nil {
			return cr.stop(r.step(), err, nil)
		}
		cr.cr.Result = ResultWouldPatch
		cr.a.req.Progress("  %s: would set %s (dry run)", cr.name, r.step())
		return nil
	}
	begin := time.Now()
	sr := FleetStepReport{Component: Machines, Version: r.text()}
	if len(r.toReplace(s)) > 0 {
		// What an earlier change left rolling finishes before the rotation is asked.
		if failed := cr.waitSettled("", ""); failed != nil {
			return failed
		}
		if cr.userCtx.Err() != nil || cr.gctx.Err() != nil {
			return cr.stop(r.step(), cr.userCtx.Err(), nil)
		}
		// The patch runs to its end even when Ctrl-C arrives meanwhile: it stops after it.
		patched, err := r.restart(context.WithoutCancel(cr.ctx), cr.a, cr.cu)
		sr.Patched = patched
		if err != nil {
			cr.cr.Steps = append(cr.cr.Steps, sr)
			return cr.stop(r.step(), err, nil)
		}
		if len(patched) > 0 {
			cr.a.req.Progress("  %s: set %s on %s", cr.name, r.step(), strings.Join(patched, ", "))
		} else {
			cr.a.req.Progress("  %s: %s asked already, waiting for the controllers", cr.name, r.step())
		}
	}
	cr.cr.Steps = append(cr.cr.Steps, sr)
	last, err := cr.a.poll(cr.ctx, cr.cu, cr.info, r.done)
	st := &cr.cr.Steps[len(cr.cr.Steps)-1]
	st.Seconds = since(begin)
	if err != nil {
		return cr.stop(r.step(), err, last)
	}
	st.Done = true
	cr.cr.Result = ResultRotated
	cr.a.req.Progress("  %s: %s in %.0fs", cr.name, r.goal(), since(begin))
	return nil
}
