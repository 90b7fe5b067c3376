package fleetupgrade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/health"
	"github.com/capctl/capctl/pkg/kubesupport"
	"github.com/capctl/capctl/pkg/multicluster"
)

// FleetSelection picks the clusters of a fleet operation; the plan and the apply use the same.
type FleetSelection struct {
	// Namespace limits the fleet to one namespace; empty means every namespace.
	Namespace string
	// Selector is a label selector over the Clusters' labels (kubectl syntax); empty: all.
	Selector string
	// Wave limits the apply to the clusters of one wave number.
	Wave *int
}

// FleetApplyRequest is `capctl upgrade apply --kubernetes-version`: one request, one call.
type FleetApplyRequest struct {
	KubernetesVersion string
	Selection         FleetSelection
	// Plan, when set, is the path of a saved plan (`upgrade plan --save`) to apply exactly: it
	// gives the version, the selection and the rollout (KubernetesVersion, Selection and
	// Rollout must be empty then). Before the first patch and before each wave the plan is
	// compared with the clusters, and any difference refuses (DriftError) or stops the run.
	Plan string
	// Rollout is how the waves are rolled.
	Rollout Rollout
	// Rotation, when set, makes the run a machine rotation instead of a Kubernetes upgrade:
	// every Machine of the selected clusters is replaced (rollout.after), through the same
	// waves and gates. KubernetesVersion and Plan must be empty then.
	Rotation *Rotation
	// Rebase, when set, makes the run a ClusterClass rebase (`topology apply`): the clusters it
	// lists move to the new class, through the same waves and gates. KubernetesVersion, Plan
	// and Rotation must be empty then.
	Rebase *Rebase
	// NoWait makes a run outside Rollout.Window stop at once, saying when the window opens
	// next, instead of waiting for it.
	NoWait bool
	// DryRun sends the first patch of every cluster as a server-side dry run and changes nothing.
	DryRun bool
	// Timeout bounds the whole upgrade of one cluster (default DefaultClusterTimeout).
	Timeout time.Duration
	// PollInterval is how often a cluster's state is read while a step rolls out (default
	// DefaultPollInterval).
	PollInterval time.Duration
	// Progress, when set, receives one line per event (a wave starts, a cluster patched, done).
	Progress func(format string, args ...any)
	// Health is the soak's look at a cluster beyond its conditions and Machines, wired by the
	// caller (`capctl upgrade apply`: diagnose's rules); a rollout with a soak needs one.
	Health health.Check
}

// Defaults of a FleetApplyRequest (`upgrade apply --timeout` shows DefaultClusterTimeout).
const (
	DefaultClusterTimeout = 30 * time.Minute
	DefaultPollInterval   = 5 * time.Second
)

// Cluster results in a FleetApplyReport.
const (
	ResultUpgraded    = "Upgraded"
	ResultUpToDate    = "UpToDate"
	ResultWouldPatch  = "WouldUpgrade"
	ResultFailed      = "Failed"
	ResultStopped     = "Stopped"
	ResultNotStarted  = "NotStarted"
	ResultInterrupted = "Interrupted"
)

// resultDone reports whether a cluster's result says the change is done with it: this run
// changed it (each change has its own word: Upgraded, Rotated, Rebased) or found it done
// already. These are the clusters a soak watches.
func resultDone(result string) bool {
	switch result {
	case ResultUpgraded, ResultRotated, ResultRebased, ResultUpToDate:
		return true
	}
	return false
}

// FleetApplyReport is what the fleet apply did, wave by wave.
type FleetApplyReport struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	// RolloutAfter is the time of a machine rotation (then KubernetesVersion is empty).
	RolloutAfter string `json:"rolloutAfter,omitempty"`
	// ClassRebase is a ClusterClass rebase, "namespace/old -> new" (then KubernetesVersion is
	// empty).
	ClassRebase string             `json:"classRebase,omitempty"`
	DryRun      bool               `json:"dryRun,omitempty"`
	Waves       []FleetWaveReport  `json:"waves"`
	Failure     *FleetApplyFailure `json:"failure,omitempty"`
	// Failures are every cluster that failed, in order; with --max-failures K the run goes on
	// past K of them (Failure is then the one that stopped it, or nil).
	Failures []FleetApplyFailure `json:"failures,omitempty"`
	// Stop is why the run stopped between waves (the plan no longer matched the clusters, a
	// gate); the clusters were left as they were.
	Stop *FleetStop `json:"stop,omitempty"`
	// PlanDigest is the digest of the plan file applied (--plan).
	PlanDigest string `json:"planDigest,omitempty"`
	// Record is the name of the run's audit record (a ConfigMap in AuditNamespace; `capctl
	// upgrade history NAME`); none for a dry run.
	Record string `json:"record,omitempty"`
	// Preflight is what was checked before the first write.
	Preflight *FleetPreflight `json:"preflight,omitempty"`
	// Interrupted is set when the user stopped the run; re-running the same command continues.
	Interrupted bool `json:"interrupted,omitempty"`
	// ManagementClusters are the management clusters the run spanned (--contexts or
	// --all-contexts), with their summary; nil for one management cluster.
	ManagementClusters []multicluster.ManagementCluster `json:"managementClusters,omitempty"`
}

// FleetWaveReport is one wave: its clusters and how long it took.
type FleetWaveReport struct {
	Wave     string               `json:"wave"`
	Seconds  float64              `json:"seconds"`
	Clusters []FleetClusterReport `json:"clusters"`
	// Started and Finished are when the wave started and when it and its gates ended.
	Started  *time.Time `json:"started,omitempty"`
	Finished *time.Time `json:"finished,omitempty"`
	// Gates are the soak and the gate command run after it.
	Gates []GateResult `json:"gates,omitempty"`
}

// FleetClusterReport is one cluster's steps.
type FleetClusterReport struct {
	ManagementCluster string            `json:"managementCluster,omitempty"`
	Namespace         string            `json:"namespace"`
	Name              string            `json:"name"`
	Result            string            `json:"result"`
	Seconds           float64           `json:"seconds"`
	Steps             []FleetStepReport `json:"steps,omitempty"`
}

// FleetStepReport is one version change: the objects capctl patched in it (none when a re-run
// found the version already set) and how long until the step was done.
type FleetStepReport struct {
	Component string   `json:"component"`
	Version   string   `json:"version"`
	Patched   []string `json:"patched,omitempty"`
	Seconds   float64  `json:"seconds"`
	Done      bool     `json:"done"`
	// TopologyPlan is set when the topology controller applied this version, walking the upgrade
	// plan it computed after spec.topology.version was set to the target (a chained upgrade);
	// the first such step carries capctl's patch.
	TopologyPlan bool `json:"topologyPlan,omitempty"`
	// Predicted, Replaced and PredictionHeld are a ClusterClass rebase's: the parts the topology
	// plan said replace their machines, those whose machines this run saw replaced ("control
	// plane", "MachineDeployment NAME"), and whether the two agree.
	Predicted      []string `json:"predicted,omitempty"`
	Replaced       []string `json:"replaced,omitempty"`
	PredictionHeld *bool    `json:"predictionHeld,omitempty"`
}

// FleetApplyFailure names the cluster and step that stopped the fleet, and why.
type FleetApplyFailure struct {
	ManagementCluster string `json:"managementCluster,omitempty"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Step              string `json:"step"`
	Reason            string `json:"reason"`
	// Pending are what the controllers had not finished when it stopped.
	Pending []string `json:"pending,omitempty"`
	// Describe is the cluster's `capctl describe cluster` tree at that moment.
	Describe []string `json:"describe,omitempty"`
}

// FleetStop is why a rollout stopped between waves. Nothing is undone: the clusters stay as
// they are, and re-running the same command continues from their state.
type FleetStop struct {
	// At is where it stopped: "before wave 2", "after wave canary".
	At string `json:"at"`
	// Gate is what stopped it: "plan", "soak", "gate-command", "window".
	Gate   string `json:"gate"`
	Reason string `json:"reason"`
	// Details are every drift, the finding's evidence, the gate's output.
	Details []string `json:"details,omitempty"`
}

// ErrFleetStopped is returned (with the report) when a cluster failed or timed out.
var ErrFleetStopped = errors.New("the fleet upgrade stopped")

// ErrFleetFailed is returned (with the report) when the run went through every wave but some
// clusters failed (no more than --max-failures).
var ErrFleetFailed = errors.New("the fleet upgrade finished with failed clusters")

// ErrFleetInterrupted is returned (with the report) when the context was cancelled (Ctrl-C).
var ErrFleetInterrupted = errors.New("the fleet upgrade was interrupted")

// PreflightError lists every reason the fleet apply refused to start; nothing was changed.
type PreflightError struct {
	Problems []string
	// Notes are what the preflight could not check (a provider that declares no supported
	// Kubernetes range, say); they are no reason to refuse.
	Notes []string
}

func (e *PreflightError) Error() string {
	msg := "the fleet upgrade was refused, nothing was changed:\n  - " + strings.Join(e.Problems, "\n  - ")
	if len(e.Notes) > 0 {
		msg += "\nnot checked:\n  - " + strings.Join(e.Notes, "\n  - ")
	}
	return msg
}

// ApplyFleet upgrades the Kubernetes version of the selected clusters wave by wave, following
// the plan PlanFleet prints. Every check runs before the first write. It returns the report
// also when it stops (ErrFleetStopped, ErrFleetInterrupted).
func ApplyFleet(ctx context.Context, c client.Client, req FleetApplyRequest) (*FleetApplyReport, error) {
	return ApplyFleets(ctx, []FleetMember{{Client: c}}, req)
}

// ApplyFleets is ApplyFleet over several management clusters: their clusters form one plan, a
// wave spans them and is done only when its clusters in every management cluster are done, and
// every check (plan, providers, dry run) runs on every management cluster before the first
// write. With one member named "" it is ApplyFleet.
func ApplyFleets(ctx context.Context, members []FleetMember, req FleetApplyRequest) (*FleetApplyReport, error) {
	rr, err := resolveApply(ctx, req)
	if err != nil {
		return nil, err
	}
	req, pf, edited := rr.FleetApplyRequest, rr.planFile, rr.edited
	clients, err := memberClients(members)
	if err != nil {
		return nil, err
	}
	if pf != nil {
		// Before the first patch: every difference between the plan and the clusters refuses.
		drifts := managementDrift(pf, members)
		if edited != "" {
			drifts = append([]string{edited}, drifts...)
		}
		more, err := fleetDrift(ctx, members, pf, req, rr.change, 0)
		if err != nil {
			return nil, err
		}
		drifts = append(drifts, more...)
		if len(drifts) > 0 {
			return nil, &DriftError{Path: req.Plan, Before: "before the first patch", Drifts: drifts}
		}
	}
	plan, infos, preflight, err := preflightFleet(ctx, members, clients, req, rr.change)
	if err != nil {
		return nil, err
	}
	report := newFleetReport(req, plan, preflight, pf)
	a := &fleetApplier{clients: clients, req: req, change: rr.change, window: rr.window, infos: infos, members: members, planFile: pf}
	if !req.DryRun {
		var names []string
		for _, m := range members {
			if m.Name != "" {
				names = append(names, m.Name)
			}
		}
		// Before the first patch: a run that cannot be recorded does not start.
		if a.rec, err = newRecorder(ctx, clients, plan, req, report.PlanDigest, names); err != nil {
			return nil, err
		}
		report.Record = a.rec.rec.Name
		req.Progress("Recording the rollout in ConfigMap %s/%s (capctl upgrade history %s)", AuditNamespace, report.Record, report.Record)
		defer a.rec.finish(ctx, report)
	}
	a.runWaves(ctx, plan, report)
	switch {
	case report.Interrupted:
		return report, ErrFleetInterrupted
	case report.Failure != nil, report.Stop != nil:
		return report, ErrFleetStopped
	case len(report.Failures) > 0:
		return report, ErrFleetFailed
	}
	return report, nil
}

// Validate checks the request without any I/O; its errors name the flags. A saved plan (--plan)
// gives the version, the selection and the rollout, so they must be empty then (the plan's are
// checked when it is read); a Timeout or PollInterval that is not positive means the default.
func (req FleetApplyRequest) Validate() error {
	if req.Plan != "" {
		if req.KubernetesVersion != "" || req.Selection != (FleetSelection{}) || req.Rollout != (Rollout{}) || req.Rotation != nil || req.Rebase != nil {
			return fmt.Errorf("the plan file %s gives the version, the selection and the rollout: they cannot also be given", req.Plan)
		}
		return nil
	}
	_, _, err := req.resolve()
	return err
}

// resolve checks a request without a saved plan (Validate) and returns its change (the version
// parsed, or the rotation) and window, each parsed once.
func (req FleetApplyRequest) resolve() (fleetChange, *Window, error) {
	var ch fleetChange
	switch {
	case req.Rebase != nil:
		if req.Rotation != nil || req.KubernetesVersion != "" {
			return nil, nil, errors.New("a ClusterClass rebase keeps every version and machine: it cannot be given with a version or a rotation")
		}
		if req.Selection.Wave != nil {
			return nil, nil, errors.New("a ClusterClass rebase rolls every wave in order: it takes no wave (resume an interrupted one by running it again)")
		}
		rb, err := req.Rebase.resolve()
		if err != nil {
			return nil, nil, err
		}
		ch = rb
	case req.Rotation != nil:
		if req.Selection.Wave != nil {
			return nil, nil, errors.New("a machine rotation rolls every wave in order: it takes no wave (resume an interrupted one with its --rollout-after)")
		}
		r, err := req.Rotation.resolve(req.KubernetesVersion)
		if err != nil {
			return nil, nil, err
		}
		ch = r
	default:
		t, err := resolveTarget(req.KubernetesVersion)
		if err != nil {
			return nil, nil, err
		}
		ch = versionUpgrade{t}
	}
	if _, err := SelectFleet(nil, req.Selection); err != nil {
		return nil, nil, err
	}
	if err := req.Rollout.check(); err != nil {
		return nil, nil, err
	}
	w, err := req.Rollout.window()
	return ch, w, err
}

// Complete validates the request (Validate) and writes its version as vX.Y.Z (1.35.1 and
// v1.35.1 alike), without any I/O: what a command calls once its flags are parsed.
func (req *FleetApplyRequest) Complete() error {
	if req.Plan != "" {
		return req.Validate()
	}
	ch, _, err := req.resolve()
	if err != nil {
		return err
	}
	ch.complete(req)
	return nil
}

// resolvedApply is a FleetApplyRequest resolved once, before anything is read: the saved plan
// (with what was edited in it, if anything), the target version parsed and written as vX.Y.Z, the
// window parsed, the defaults filled. Nothing downstream parses the version or the window again.
type resolvedApply struct {
	FleetApplyRequest
	change   fleetChange
	window   *Window // nil: no window
	planFile *PlanFile
	edited   string
}

// resolveApply resolves the request (resolvedApply): the version and the window are parsed once
// here, the request's or the saved plan's.
func resolveApply(ctx context.Context, req FleetApplyRequest) (resolvedApply, error) {
	r := resolvedApply{}
	var err error
	if req.Plan == "" {
		if r.change, r.window, err = req.resolve(); err != nil {
			return r, err
		}
	} else {
		if err := req.Validate(); err != nil {
			return r, err
		}
		if r.planFile, r.edited, err = loadPlanFile(ctx, req.Plan); err != nil {
			return r, err
		}
		pf := r.planFile
		req.KubernetesVersion, req.Selection, req.Rollout = pf.Plan.KubernetesVersion, pf.Selection.fleetSelection(), pf.Rollout
		t, err := resolveTarget(req.KubernetesVersion)
		if err != nil {
			return r, fmt.Errorf("plan file %s: %w", req.Plan, err)
		}
		r.change = versionUpgrade{t}
		if err := req.Rollout.check(); err != nil { // the saved plan's rollout
			return r, err
		}
		if r.window, err = req.Rollout.window(); err != nil {
			return r, err
		}
	}
	// 1.35.1 and v1.35.1 alike, as every command accepts them; v1.35.1 is what gets written (a
	// rotation's time, to the second, in UTC).
	r.change.complete(&req)
	if req.Rollout.Soak > 0 && req.Health == nil && !req.DryRun {
		return r, errors.New("a rollout with a soak needs a health check (FleetApplyRequest.Health): without one the soak could not see new problems")
	}
	if req.Timeout <= 0 {
		req.Timeout = DefaultClusterTimeout
	}
	if req.PollInterval <= 0 {
		req.PollInterval = DefaultPollInterval
	}
	if req.Progress == nil {
		req.Progress = func(string, ...any) {}
	}
	r.FleetApplyRequest = req
	return r, nil
}

// newFleetReport is the report before the first wave: every cluster of the plan not started.
func newFleetReport(req FleetApplyRequest, plan *FleetPlan, preflight *FleetPreflight, pf *PlanFile) *FleetApplyReport {
	report := &FleetApplyReport{KubernetesVersion: req.KubernetesVersion, RolloutAfter: plan.RolloutAfter, ClassRebase: plan.ClassRebase, DryRun: req.DryRun, Waves: []FleetWaveReport{}, Preflight: preflight}
	if pf != nil {
		report.PlanDigest = pf.Digest
	}
	for _, w := range plan.Waves {
		report.Waves = append(report.Waves, FleetWaveReport{Wave: w.Name(), Clusters: make([]FleetClusterReport, len(w.Clusters))})
		for i, cu := range w.Clusters {
			report.Waves[len(report.Waves)-1].Clusters[i] = FleetClusterReport{ManagementCluster: cu.ManagementCluster, Namespace: cu.Namespace, Name: cu.Name, Result: ResultNotStarted}
		}
	}
	return report
}

// runWaves rolls the plan's waves in order, each after its window opens and the saved plan (if
// any) still matches the clusters, each followed by its gates, until one stops the run.
func (a *fleetApplier) runWaves(ctx context.Context, plan *FleetPlan, report *FleetApplyReport) {
	req, pf := a.req, a.planFile
	if len(plan.Waves) > 0 && plan.Waves[0].Canary {
		var refs []string
		for _, cu := range plan.Waves[0].Clusters {
			refs = append(refs, cu.Ref())
		}
		req.Progress("Canary: %s (the first %d of the selection by management cluster, namespace and name)", strings.Join(refs, ", "), len(refs))
	}
	for wi, w := range plan.Waves {
		wr := &report.Waves[wi]
		waited := false
		if !req.DryRun {
			var stop *FleetStop
			if waited, stop = a.awaitWindow(ctx, w); stop != nil {
				report.Stop = stop
				req.Progress("Wave %s: not started: %s", w.Name(), stop.Reason)
				return
			}
			if ctx.Err() != nil {
				report.Interrupted = true
				return
			}
		}
		if pf != nil && (wi > 0 || waited) {
			// Before each later wave: its clusters and those after must still be as planned.
			drifts, err := fleetDrift(ctx, a.members, pf, req, a.change, wi)
			if err != nil {
				drifts = []string{"the clusters could not be read to compare them with the plan: " + err.Error()}
			}
			if len(drifts) > 0 {
				report.Stop = &FleetStop{At: "before wave " + w.Name(), Gate: GatePlan, Reason: fmt.Sprintf("the plan %s no longer matches the clusters", req.Plan), Details: drifts}
				req.Progress("Wave %s: not started, the plan no longer matches the clusters", w.Name())
				return
			}
		}
		if d, ok := a.change.(planDrifter); ok && (wi > 0 || waited) {
			infos, err := ReadFleets(ctx, a.members, req.Selection)
			drifts := []string{}
			if err != nil {
				drifts = append(drifts, "the clusters could not be read to compare them with the plan: "+err.Error())
			} else {
				drifts = d.Drift(infos)
			}
			if len(drifts) > 0 {
				report.Stop = &FleetStop{At: "before wave " + w.Name(), Gate: GatePlan, Reason: "the clusters no longer match the topology plan", Details: drifts}
				req.Progress("Wave %s: not started, the clusters no longer match the topology plan", w.Name())
				return
			}
		}
		req.Progress("Wave %s: %d cluster(s), %d at once", w.Name(), len(w.Clusters), min(req.Rollout.parallel(len(w.Clusters)), len(w.Clusters)))
		start := time.Now()
		wr.Started = &start
		a.rec.wave(ctx, wi, wr)
		stopped := a.runWave(ctx, wi, w, wr, report)
		wr.Seconds = since(start)
		if !stopped && !req.DryRun {
			req.Progress("Wave %s: done in %.0fs", w.Name(), wr.Seconds)
			stopped = a.runGates(ctx, wi, plan, wr, report)
		}
		end := time.Now()
		wr.Finished = &end
		a.rec.wave(ctx, wi, wr)
		if stopped {
			return
		}
	}
}

// runGates runs the soak and the gate command after wave wi, recording them on its report; it
// returns true when the run must stop (a gate failed, or Ctrl-C).
func (a *fleetApplier) runGates(ctx context.Context, wi int, plan *FleetPlan, wr *FleetWaveReport, report *FleetApplyReport) bool {
	w := plan.Waves[wi]
	gates := []func() (GateResult, *FleetStop){}
	if a.req.Rollout.Soak > 0 {
		gates = append(gates, func() (GateResult, *FleetStop) { return a.soak(ctx, w, wr) })
	}
	if a.req.Rollout.GateCommand != "" {
		gates = append(gates, func() (GateResult, *FleetStop) {
			return a.gateCommand(ctx, wi, len(plan.Waves), w, report.PlanDigest)
		})
	}
	for _, gate := range gates {
		res, stop := gate()
		wr.Gates = append(wr.Gates, res)
		a.rec.wave(ctx, wi, wr)
		switch {
		case stop != nil:
			report.Stop = stop
			return true
		case ctx.Err() != nil:
			report.Interrupted = true
			return true
		}
	}
	return false
}

// fleetDrift reads the selection again and compares it with the saved plan from wave index from.
func fleetDrift(ctx context.Context, members []FleetMember, pf *PlanFile, req FleetApplyRequest, ch fleetChange, from int) ([]string, error) {
	infos, err := ReadFleets(ctx, members, req.Selection)
	if err != nil {
		return nil, err
	}
	live, err := planWaves(infos, ch, req.Rollout)
	if err != nil {
		return nil, err
	}
	return planDrift(pf, live, infos, from), nil
}

func since(t time.Time) float64 { return float64(time.Since(t).Milliseconds()) / 1000 }

// preflightFleet reads the fleet, plans it and refuses, listing every reason at once, when any
// selected cluster cannot be upgraded: unplannable clusters, steps whose patch nothing names, an
// earlier wave not done, installed providers that say they do not support a version to set, and
// first patches the API server refuses as a dry run. Nothing is written before it passes.
func preflightFleet(ctx context.Context, members []FleetMember, clients map[string]client.Client, req FleetApplyRequest, ch fleetChange) (*FleetPlan, map[string]ClusterInfo, *FleetPreflight, error) {
	infos, err := ReadFleets(ctx, members, req.Selection)
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := planWaves(infos, ch, req.Rollout)
	if err != nil {
		return nil, nil, nil, err
	}
	byKey := map[string]ClusterInfo{}
	for _, in := range infos {
		byKey[in.ref()] = in
	}
	var problems []string
	for _, u := range plan.Unplannable {
		if w := req.Selection.Wave; w != nil && u.Wave != "" {
			if _, n, bad := clusterWave(byKey[u.Ref()].Labels); bad == "" && n != nil && *n != *w {
				continue
			}
		}
		problems = append(problems, fmt.Sprintf("cluster %s: %s", u.Ref(), u.Reason))
	}
	var waves []FleetWave
	for _, w := range plan.Waves {
		if sel := req.Selection.Wave; sel != nil {
			if w.Wave == nil || *w.Wave != *sel {
				// An earlier wave that is not done yet must go first.
				if w.Wave != nil && *w.Wave < *sel {
					for _, cu := range w.Clusters {
						if !cu.UpToDate {
							problems = append(problems, fmt.Sprintf("cluster %s of the earlier wave %d is not %s yet: roll wave %d first", cu.Ref(), *w.Wave, ch.goal(), *w.Wave))
						}
					}
				}
				continue
			}
		}
		for _, cu := range w.Clusters {
			for _, s := range cu.Steps {
				if s.AnyPatch {
					problems = append(problems, fmt.Sprintf("cluster %s: the path to %s goes through %s and nothing names which patch of that minor to use (the ClusterClass lists no spec.kubernetesVersions): upgrade to a v%d.%d patch first, e.g. --kubernetes-version v%d.%d.0", cu.Ref(), req.KubernetesVersion, strings.TrimSuffix(s.Version, ".x"), minorMajor(s.Version), minorOf(s.Version), minorMajor(s.Version), minorOf(s.Version)))
					break
				}
			}
		}
		waves = append(waves, w)
	}
	if sel := req.Selection.Wave; sel != nil && len(waves) == 0 {
		return nil, nil, nil, &PreflightError{Problems: []string{fmt.Sprintf("no selected cluster is in wave %d (label %s or %s)", *sel, WaveLabel, PlainWaveLabel)}}
	}
	pf, refused, err := ch.preflight(ctx, members, waves)
	if err != nil {
		return nil, nil, nil, err
	}
	problems = append(problems, refused...)
	var unsettled []string
	refused, unsettled, pf.DryRunPatches, err = dryRunFirstPatches(ctx, clients, req, ch, waves, byKey)
	if err != nil {
		return nil, nil, nil, err
	}
	problems = append(problems, refused...)
	pf.Notes = append(pf.Notes, unsettled...)
	for _, p := range pf.Providers {
		switch p.Status {
		case kubesupport.Supported:
			req.Progress("Preflight: %s %s supports workload clusters %s", p.Provider, p.Version, p.Range)
		case kubesupport.NotDeclared:
			req.Progress("Preflight: %s %s: %s (not checked)", p.Provider, p.Version, p.Reason)
		}
	}
	if len(problems) > 0 {
		return nil, nil, nil, &PreflightError{Problems: problems, Notes: pf.Notes}
	}
	plan.Waves = waves
	return plan, byKey, pf, nil
}

func minorMajor(v string) uint64 {
	var maj uint64
	fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.", &maj)
	return maj
}

// SelectFleet keeps the clusters of the selection's namespace whose labels match its selector.
func SelectFleet(infos []ClusterInfo, sel FleetSelection) ([]ClusterInfo, error) {
	if err := cluster.CheckNamespace(sel.Namespace); err != nil {
		return nil, err
	}
	s := labels.Everything()
	if sel.Selector != "" {
		var err error
		if s, err = labels.Parse(sel.Selector); err != nil {
			return nil, fmt.Errorf("--selector %q: %w", sel.Selector, err)
		}
	}
	var out []ClusterInfo
	for _, in := range infos {
		if (sel.Namespace == "" || in.Namespace == sel.Namespace) && s.Matches(labels.Set(in.Labels)) {
			out = append(out, in)
		}
	}
	return out, nil
}

type fleetApplier struct {
	// clients are the management clusters' clients by context ("" for one management cluster).
	clients map[string]client.Client
	members []FleetMember
	// planFile is the saved plan applied (--plan), nil without one.
	planFile *PlanFile
	window   *Window
	req      FleetApplyRequest
	// change is what the run does to each cluster, resolved once (resolveApply).
	change fleetChange
	infos  map[string]ClusterInfo
	mu     sync.Mutex
	// rec writes the run's audit record (nil for a dry run).
	rec *recorder
}

// runWave upgrades a wave's clusters, at most Rollout.parallel at once; the failure that makes
// the run's failures exceed MaxFailures stops the wave (clusters not started stay untouched) and
// it returns true when the fleet must stop.
func (a *fleetApplier) runWave(ctx context.Context, wi int, w FleetWave, wr *FleetWaveReport, report *FleetApplyReport) bool {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.req.Rollout.parallel(len(w.Clusters)))
	for i := range w.Clusters {
		cu := w.Clusters[i]
		cr := &wr.Clusters[i]
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil // stopped before it started: untouched
			}
			start := time.Now()
			a.rec.cluster(ctx, wi, i, ResultUpgrading, nil, nil)
			fail := a.runCluster(ctx, gctx, cu, cr)
			cr.Seconds = since(start)
			a.rec.cluster(ctx, wi, i, cr.Result, fail, cr.Steps)
			if fail == nil {
				return nil
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if cr.Result != ResultFailed {
				return errors.New(fail.Reason)
			}
			report.Failures = append(report.Failures, *fail)
			if len(report.Failures) <= a.req.Rollout.MaxFailures {
				a.req.Progress("  %s: failure %d of the %d --max-failures allows, the rollout goes on", cu.Ref(), len(report.Failures), a.req.Rollout.MaxFailures)
				return nil
			}
			if report.Failure == nil {
				report.Failure = fail
			}
			return errors.New(fail.Reason)
		})
	}
	_ = g.Wait()
	if ctx.Err() != nil {
		report.Interrupted = true
		return true
	}
	return report.Failure != nil
}

func stepName(component, version string) string {
	return UpgradeStep{Component: component, Version: version}.String()
}

// patchKind says which objects a step patches.
type patchKind int

const (
	patchTopology patchKind = iota
	patchControlPlane
	patchWorkers
)

// nextPatch picks the next version to set from the cluster's fresh plan. A topology cluster gets
// spec.topology.version (the target at once when its ClusterClass lists versions: the topology
// controller then walks the minors itself); workers of a topology follow on their own.
func nextPatch(s ClusterState, info ClusterInfo, cu ClusterUpgrade, target string) (string, string, patchKind) {
	if s.Topology() {
		if s.ControlPlaneVersion() == target {
			return "", "", patchTopology
		}
		if info.ClassVersions != nil {
			return ControlPlane, target, patchTopology
		}
		for _, st := range cu.Steps {
			if st.Component == ControlPlane {
				return ControlPlane, st.Version, patchTopology
			}
		}
		return "", "", patchTopology
	}
	if len(cu.Steps) == 0 {
		return "", "", patchControlPlane
	}
	st := cu.Steps[0]
	if st.Component == Workers {
		return Workers, st.Version, patchWorkers
	}
	return ControlPlane, st.Version, patchControlPlane
}

// stepsToGo lists the steps not done: "control plane v1.35.0 -> control plane v1.36.0 -> workers v1.36.0".
func stepsToGo(steps []FleetStepReport) string {
	var out []string
	for _, st := range steps {
		if !st.Done {
			out = append(out, stepName(st.Component, st.Version))
		}
	}
	return strings.Join(out, " -> ")
}

// planLine shows the topology controller's plan as its status lists it (a version leaves the
// list once applied): "control plane v1.36.0; workers v1.36.0".
func planLine(cp, workers []string) string {
	var parts []string
	if len(cp) > 0 {
		parts = append(parts, "control plane "+strings.Join(cp, ", "))
	}
	if len(workers) > 0 {
		parts = append(parts, "workers "+strings.Join(workers, ", "))
	}
	return strings.Join(parts, "; ")
}

// poll reads the cluster's state every PollInterval until done says so, the context ends, or the
// cluster's timeout; it returns the reasons done gave at the last successful read, and the read
// error instead only when no read succeeded or the last one failed well before the deadline.
func (a *fleetApplier) poll(ctx context.Context, cu ClusterUpgrade, info ClusterInfo, done func(ClusterState) (bool, []string)) ([]string, error) {
	var pending []string
	var readErr error
	var readFailedAt time.Time
	err := cluster.PollUntilCancel(ctx, a.req.PollInterval, func(ctx context.Context) (bool, error) {
		s, err := a.readState(ctx, info, cu)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			// A failed read (API server restarting, a timeout) is retried until the deadline.
			readErr, readFailedAt = err, time.Now()
			return false, nil
		}
		readErr = nil
		var ok bool
		ok, pending = done(s)
		return ok, nil
	})
	if readErr == nil {
		return pending, err
	}
	// A read cut short by the cluster's own deadline (client-go's rate limiter refuses a wait that
	// would pass it, before the context itself ends) says nothing about the cluster: what the last
	// successful read found pending is the answer.
	if dl, ok := ctx.Deadline(); ok && pending != nil && dl.Sub(readFailedAt) < a.req.PollInterval {
		return pending, err
	}
	if pending == nil {
		return []string{readErr.Error()}, err
	}
	return append(pending, "the last read failed: "+readErr.Error()), err
}

var capiV1beta2 = schema.GroupVersion{Group: contract.Group, Version: "v1beta2"}

// readState reads the cluster, its control plane, workers and machines.
func (a *fleetApplier) readState(ctx context.Context, info ClusterInfo, cu ClusterUpgrade) (ClusterState, error) {
	var s ClusterState
	c := a.clients[cu.ManagementCluster]
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capiV1beta2.WithKind("Cluster"))
	if err := c.Get(ctx, types.NamespacedName{Namespace: cu.Namespace, Name: cu.Name}, cl); err != nil {
		return s, fmt.Errorf("reading Cluster %s/%s: %w", cu.Namespace, cu.Name, err)
	}
	s.Cluster = cl
	ref, ok, _ := unstructured.NestedStringMap(cl.Object, "spec", "controlPlaneRef")
	if ok && ref["name"] != "" && ref["kind"] != "" {
		m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]})
		if err != nil {
			return s, fmt.Errorf("control plane kind %s: %w", ref["kind"], err)
		}
		cp := &unstructured.Unstructured{}
		cp.SetGroupVersionKind(m.GroupVersionKind)
		if err := c.Get(ctx, types.NamespacedName{Namespace: cu.Namespace, Name: ref["name"]}, cp); err == nil {
			s.ControlPlane = cp
		} else if !apierrors.IsNotFound(err) {
			return s, fmt.Errorf("reading control plane %s %s: %w", ref["kind"], ref["name"], err)
		}
	}
	for _, kind := range []string{"MachineDeployment", "MachinePool", "Machine"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(capiV1beta2.WithKind(kind + "List"))
		err := c.List(ctx, list, client.InNamespace(cu.Namespace), client.MatchingLabels{ClusterNameLabel: cu.Name})
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return s, fmt.Errorf("listing %ss of %s/%s: %w", kind, cu.Namespace, cu.Name, err)
		}
		if kind == "Machine" {
			s.Machines = list.Items
		} else {
			s.Workers = append(s.Workers, list.Items...)
		}
	}
	return s, nil
}

// patch sets version on what the step changes and returns the objects it patched; objects that
// have it already are left alone (a re-run patches nothing twice).
func (a *fleetApplier) patch(ctx context.Context, management string, s ClusterState, kind patchKind, version string) ([]string, error) {
	c := a.clients[management]
	var opts []client.PatchOption
	if a.req.DryRun {
		opts = append(opts, client.DryRunAll)
	}
	mergePatch := func(u *unstructured.Unstructured, path ...string) error {
		body := map[string]any{}
		cur := body
		for _, p := range path[:len(path)-1] {
			next := map[string]any{}
			cur[p] = next
			cur = next
		}
		cur[path[len(path)-1]] = version
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, data), opts...); err != nil {
			return fmt.Errorf("patching %s/%s: %w", u.GetNamespace(), objName(u), err)
		}
		return nil
	}
	var done []string
	switch kind {
	case patchTopology:
		if s.ControlPlaneVersion() != version {
			if err := mergePatch(s.Cluster, "spec", "topology", "version"); err != nil {
				return done, err
			}
			done = append(done, "Cluster "+s.Cluster.GetName()+" spec.topology.version")
		}
	case patchControlPlane:
		if s.ControlPlane == nil {
			return nil, fmt.Errorf("the control plane of %s/%s was not found", s.Cluster.GetNamespace(), s.Cluster.GetName())
		}
		if v, _, _ := unstructured.NestedString(s.ControlPlane.Object, "spec", "version"); v != version {
			if err := mergePatch(s.ControlPlane, "spec", "version"); err != nil {
				return done, err
			}
			done = append(done, objName(s.ControlPlane)+" spec.version")
		}
	case patchWorkers:
		for i := range s.Workers {
			w := &s.Workers[i]
			if workerVersion(w) == version {
				continue
			}
			if err := mergePatch(w, "spec", "template", "spec", "version"); err != nil {
				return done, err
			}
			done = append(done, objName(w)+" spec.template.spec.version")
		}
	}
	return done, nil
}

// describeLines renders the cluster's describe tree, to show why it stopped.
func (a *fleetApplier) describeLines(cu ClusterUpgrade) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	t, err := describe.Discover(ctx, a.clients[cu.ManagementCluster], describe.ClusterRequest{Namespace: cu.Namespace, Name: cu.Name, ShowConditions: "all"})
	if err != nil {
		return []string{"(describe failed: " + err.Error() + ")"}
	}
	var b bytes.Buffer
	if err := describe.Render(&b, t, describe.RenderOptions{}); err != nil {
		return []string{"(describe failed: " + err.Error() + ")"}
	}
	return strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
}
