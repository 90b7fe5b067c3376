package fleetupgrade

import (
	"context"
	"time"
)

// fleetChange is what one kind of fleet rollout contributes to the one engine: what the change
// plans for a cluster, what it sends first (checked as a server-side dry run before any write),
// and how one cluster is changed and known to be done. Everything else is the engine's and
// shared by every kind: reading and selecting the fleet, wave labels and the canary,
// --max-parallel and --max-failures, windows, the soak and the gate command, saved-plan drift,
// the audit record and history, Ctrl-C and resume.
type fleetChange interface {
	// head writes the change into the plan's header (KubernetesVersion or RolloutAfter).
	head(plan *FleetPlan)
	// planCluster is one cluster's entry in the plan, or why the cluster cannot be planned.
	planCluster(info ClusterInfo) (ClusterUpgrade, string)
	// goal says what a cluster is when the change is done with it: "at v1.35.0".
	goal() string
	// preflight is the change's own checks of the waves before the first write (the installed
	// providers support the versions to set): what it checked, and the refusals.
	preflight(ctx context.Context, members []FleetMember, waves []FleetWave) (*FleetPreflight, []string, error)
	// firstPatch names the cluster's first patch from its state and returns how to send it with
	// a (whose request is a dry run in preflight); step "" when the cluster needs none.
	firstPatch(a *fleetApplier, s ClusterState, info ClusterInfo, cu ClusterUpgrade) (step string, send func(context.Context) error)
	// runCluster changes one cluster of a wave and returns its failure (nil when it is done).
	runCluster(r *clusterRun) *FleetApplyFailure
	// gateEnv is what the gate command is told of the change, as NAME=value.
	gateEnv() []string
	// complete writes the change into the request as it was resolved (the version as vX.Y.Z).
	complete(req *FleetApplyRequest)
}

// selector is a change that picks its own clusters among those of the selection (a rebase moves
// the clusters its topology plan computed).
type selector interface{ selects(ClusterInfo) bool }

// planDrifter is a change planned elsewhere (a topology plan): before each later wave the
// clusters are read again and what differs from that plan stops the run.
type planDrifter interface{ Drift([]ClusterInfo) []string }

// versionUpgrade is the fleet's Kubernetes upgrade to one version.
type versionUpgrade struct{ target target }

func (v versionUpgrade) head(plan *FleetPlan) { plan.KubernetesVersion = v.target.written }

func (v versionUpgrade) planCluster(info ClusterInfo) (ClusterUpgrade, string) {
	return planCluster(info, v.target.parsed)
}

func (v versionUpgrade) goal() string { return "at " + v.target.written }

func (v versionUpgrade) preflight(ctx context.Context, members []FleetMember, waves []FleetWave) (*FleetPreflight, []string, error) {
	return checkProvidersSupport(ctx, members, waves)
}

func (v versionUpgrade) firstPatch(a *fleetApplier, s ClusterState, info ClusterInfo, cu ClusterUpgrade) (string, func(context.Context) error) {
	step, version, kind := nextPatch(s, info, cu, v.target.written)
	if step == "" {
		return "", nil
	}
	return stepName(step, version), func(ctx context.Context) error {
		_, err := a.patch(ctx, cu.ManagementCluster, s, kind, version)
		return err
	}
}

func (v versionUpgrade) runCluster(r *clusterRun) *FleetApplyFailure { return r.run() }

func (v versionUpgrade) complete(req *FleetApplyRequest) { req.KubernetesVersion = v.target.written }

func (v versionUpgrade) gateEnv() []string {
	return []string{"CAPCTL_KUBERNETES_VERSION=" + v.target.written}
}

// rolloutAfterText writes a rotation's time as rollout.after holds it.
func rolloutAfterText(t time.Time) string { return t.UTC().Format(time.RFC3339) }
