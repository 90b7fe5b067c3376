package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// clusterRun is one cluster's upgrade within a wave: it brings the cluster to the target, step by
// step, from its actual state; before each patch it waits for what is already set to roll out, so
// a re-run patches nothing twice.
type clusterRun struct {
	a *fleetApplier
	// userCtx ends on Ctrl-C, gctx also when another cluster of the wave failed, ctx also at the
	// cluster's timeout.
	userCtx, gctx, ctx context.Context
	cu                 ClusterUpgrade
	cr                 *FleetClusterReport
	info               ClusterInfo
	name, target       string
	// patchedAny says whether this run set a version (or found one rolling out and finished it).
	patchedAny bool
}

// runCluster changes one cluster of a wave (the change's runCluster) and returns its failure (nil
// when it is done).
func (a *fleetApplier) runCluster(userCtx, gctx context.Context, cu ClusterUpgrade, cr *FleetClusterReport) *FleetApplyFailure {
	ctx, cancel := context.WithTimeout(gctx, a.req.Timeout)
	defer cancel()
	r := &clusterRun{a: a, userCtx: userCtx, gctx: gctx, ctx: ctx, cu: cu, cr: cr,
		info: a.infos[cu.Ref()], name: cu.Ref(), target: a.req.KubernetesVersion}
	return a.change.runCluster(r)
}

// run is the Kubernetes upgrade of one cluster: it loops over the cluster's steps: read its state, plan the next step from it, let what is
// under way finish, patch, wait.
func (r *clusterRun) run() *FleetApplyFailure {
	for {
		s, err := r.a.readState(r.ctx, r.info, r.cu)
		if err != nil {
			return r.stop("reading the cluster", err, nil)
		}
		r.info.ControlPlaneVersion, r.info.WorkerVersions = s.ControlPlaneVersion(), s.WorkerVersions()
		next, reason := r.a.change.planCluster(r.info)
		if reason != "" {
			return r.stop("planning", errors.New(reason), nil)
		}
		step, version, patchTarget := nextPatch(s, r.info, next, r.target)
		if r.a.req.DryRun && step == "" {
			r.cr.Result = ResultUpToDate
			r.a.req.Progress("  %s: already at %s", r.name, r.target)
			return nil
		}
		if !r.a.req.DryRun && step == "" && s.Topology() && r.info.ClassVersions != nil {
			// A chained upgrade whose spec.topology.version is at the target already (a re-run
			// after Ctrl-C): the topology controller may still be walking its plan to it; follow
			// the rest of the plan step by step. (A one-minor topology step found under way is
			// resumed below as one step.)
			tracked, failed := r.followTopology(s, time.Now(), nil)
			if failed != nil {
				return failed
			}
			return r.finish(r.patchedAny || tracked)
		}
		if !r.a.req.DryRun {
			if failed := r.settle(s); failed != nil {
				return failed
			}
		}
		if step == "" {
			return r.finish(r.patchedAny)
		}
		if done, failed := r.patchStep(s, step, version, patchTarget); done || failed != nil {
			return failed
		}
	}
}

// settle waits until whatever is set already has finished rolling out, before anything more is
// asked (after an interrupted run this is where it resumes); at the target this is the final
// wait. A version change found under way (an earlier run set it) is reported as a step of this
// run with nothing patched, and makes the cluster Upgraded, not UpToDate.
func (r *clusterRun) settle(s ClusterState) *FleetApplyFailure {
	component, rv := RolloutUnderWay(s)
	begin := time.Now()
	if component != "" {
		r.cr.Steps = append(r.cr.Steps, FleetStepReport{Component: component, Version: rv})
		r.a.req.Progress("  %s: %s already set, waiting for the controllers to finish it", r.name, stepName(component, rv))
	}
	// On a topology the objects ask the old version until the topology controller passes the new
	// one on (a run interrupted right after its patch leaves it so): wait for the whole step then,
	// not only for what the objects ask already.
	waitStep, waitVersion := "", ""
	if component != "" && s.Topology() {
		waitStep, waitVersion = component, rv
	}
	failed := r.waitSettled(waitStep, waitVersion)
	if component != "" {
		sr := &r.cr.Steps[len(r.cr.Steps)-1]
		sr.Seconds, sr.Done = since(begin), failed == nil
		r.patchedAny = r.patchedAny || failed == nil
	}
	if failed != nil {
		return failed
	}
	if component != "" {
		r.a.req.Progress("  %s: %s done in %.0fs", r.name, stepName(component, rv), since(begin))
	}
	return nil
}

// patchStep sets version on what step changes and waits until it is done. It returns done when
// the cluster needs nothing more from this run (a dry run, or a chained topology upgrade followed
// to the target), or the failure.
func (r *clusterRun) patchStep(s ClusterState, step, version string, patchTarget patchKind) (bool, *FleetApplyFailure) {
	if r.userCtx.Err() != nil || r.gctx.Err() != nil {
		return true, r.stop(stepName(step, version), r.userCtx.Err(), nil)
	}
	sr := FleetStepReport{Component: step, Version: version}
	begin := time.Now()
	// The patch runs to its end even when Ctrl-C arrives meanwhile: it stops after it.
	patched, err := r.a.patch(context.WithoutCancel(r.ctx), r.cu.ManagementCluster, s, patchTarget, version)
	sr.Patched = patched
	if err != nil {
		r.cr.Steps = append(r.cr.Steps, sr)
		return true, r.stop(stepName(step, version), err, nil)
	}
	if r.a.req.DryRun {
		sr.Done = true
		r.cr.Steps = append(r.cr.Steps, sr)
		r.cr.Result = ResultWouldPatch
		r.a.req.Progress("  %s: would set %s to %s (%s)", r.name, strings.Join(patched, ", "), version, "dry run")
		return true, nil
	}
	r.patchedAny = true
	r.a.req.Progress("  %s: set %s to %s", r.name, strings.Join(patched, ", "), version)
	if patchTarget == patchTopology && r.info.ClassVersions != nil {
		// A chained upgrade: the topology controller walks the minors; follow its plan.
		if _, failed := r.followTopology(s, begin, patched); failed != nil {
			return true, failed
		}
		r.cr.Result = ResultUpgraded
		r.a.req.Progress("  %s: at %s in %.0fs", r.name, r.target, since(begin))
		return true, nil
	}
	r.cr.Steps = append(r.cr.Steps, sr)
	if failed := r.waitSettled(step, version); failed != nil {
		r.cr.Steps[len(r.cr.Steps)-1].Seconds = since(begin)
		return true, failed
	}
	r.cr.Steps[len(r.cr.Steps)-1].Seconds = since(begin)
	r.cr.Steps[len(r.cr.Steps)-1].Done = true
	r.a.req.Progress("  %s: %s done in %.0fs", r.name, stepName(step, version), since(begin))
	return false, nil
}

// stop ends the cluster's run during step: interrupted (Ctrl-C), stopped (another cluster of the
// wave failed), or failed with err (a timeout says so), with what was pending and its describe tree.
func (r *clusterRun) stop(step string, err error, pending []string) *FleetApplyFailure {
	cu := r.cu
	switch {
	case r.userCtx.Err() != nil:
		r.cr.Result = ResultInterrupted
		r.a.req.Progress("  %s: interrupted during %s", r.name, step)
		return &FleetApplyFailure{ManagementCluster: cu.ManagementCluster, Namespace: cu.Namespace, Name: cu.Name, Step: step, Reason: "interrupted"}
	case r.gctx.Err() != nil:
		r.cr.Result = ResultStopped
		r.a.req.Progress("  %s: stopped during %s (another cluster of the wave failed)", r.name, step)
		return &FleetApplyFailure{ManagementCluster: cu.ManagementCluster, Namespace: cu.Namespace, Name: cu.Name, Step: step, Reason: "stopped because another cluster failed"}
	}
	r.cr.Result = ResultFailed
	reason := err.Error()
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		reason = fmt.Sprintf("timed out after %s waiting for %s", r.a.req.Timeout, step)
	}
	r.a.req.Progress("  %s: FAILED during %s: %s", r.name, step, reason)
	return &FleetApplyFailure{ManagementCluster: cu.ManagementCluster, Namespace: cu.Namespace, Name: cu.Name, Step: step, Reason: reason, Pending: pending, Describe: r.a.describeLines(cu)}
}

// finish ends the cluster's run at the target: Upgraded when this run changed it, else UpToDate.
func (r *clusterRun) finish(upgraded bool) *FleetApplyFailure {
	if upgraded {
		r.cr.Result = ResultUpgraded
		r.a.req.Progress("  %s: at %s", r.name, r.target)
	} else {
		r.cr.Result = ResultUpToDate
		r.a.req.Progress("  %s: already at %s", r.name, r.target)
	}
	return nil
}

// followTopology waits until a managed-topology cluster is done at the target (control plane and
// every worker at the target, rolled out, the Cluster Available and its topology reconciled),
// reporting each version the topology controller takes the control plane and the workers
// through as a step of the cluster, with its seconds (ChainTracker). base is the state read
// before the patch (if any) made at begin; patched, what that patch changed, is recorded on
// the first step. It says whether any step was seen.
func (r *clusterRun) followTopology(base ClusterState, begin time.Time, patched []string) (bool, *FleetApplyFailure) {
	tr := NewChainTracker(base, begin)
	first := len(r.cr.Steps)
	record := func() []FleetStepReport {
		steps := tr.Steps()
		if len(steps) == 0 && len(patched) > 0 {
			steps = []FleetStepReport{{Component: ControlPlane, Version: r.target}}
		}
		for i := range steps {
			steps[i].TopologyPlan = true
		}
		if len(steps) > 0 {
			steps[0].Patched = patched
		}
		r.cr.Steps = append(r.cr.Steps[:first], steps...)
		return steps
	}
	last, err := r.a.poll(r.ctx, r.cu, r.info, func(s ClusterState) (bool, []string) {
		u := tr.Observe(s, time.Now())
		for _, d := range u.Done {
			r.a.req.Progress("  %s: %s done in %.0fs", r.name, stepName(d.Component, d.Version), d.Seconds)
		}
		if u.PlanChanged && len(u.ControlPlanePlan)+len(u.WorkersPlan) > 0 {
			r.a.req.Progress("  %s: topology controller's plan (%s): %s", r.name, planLine(u.ControlPlanePlan, u.WorkersPlan), stepsToGo(tr.Steps()))
		}
		record()
		return StepDone(s, ControlPlane, r.target)
	})
	steps := record()
	if err == nil {
		return len(tr.Steps()) > 0, nil
	}
	step := stepName(ControlPlane, r.target)
	for _, st := range steps {
		if !st.Done {
			step = stepName(st.Component, st.Version)
			break
		}
	}
	return false, r.stop(step, err, last)
}

// waitSettled polls the cluster until the step is done (or, with an empty step, until what is
// set has rolled out), the cluster's timeout, or a stop.
func (r *clusterRun) waitSettled(step, version string) *FleetApplyFailure {
	last, err := r.a.poll(r.ctx, r.cu, r.info, func(s ClusterState) (bool, []string) {
		if step == "" {
			why := Pending(s)
			return len(why) == 0, why
		}
		return StepDone(s, step, version)
	})
	if err == nil {
		return nil
	}
	name := "the rollout already under way"
	if step != "" {
		name = stepName(step, version)
	}
	return r.stop(name, err, last)
}
