package fleetupgrade

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/capctl/capctl/internal/digest"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
)

// The header of a saved fleet plan (`upgrade plan --kubernetes-version --save`).
const (
	PlanFileAPIVersion = "capctl.io/v1alpha1"
	PlanFileKind       = "FleetUpgradePlan"
	// planFileMax bounds what `apply --plan` reads: a plan of thousands of clusters is a few MiB.
	planFileMax int64 = 16 << 20
)

// PlanFile is a reviewed fleet plan: what `upgrade apply --plan` applies exactly. It holds no
// Secret data: names, UIDs, versions, generations and the rollout's settings (a gate command is
// a command line; keep credentials out of it, in the gate's own environment).
type PlanFile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Selection is what picked the clusters; ManagementClusters the contexts it spanned (none
	// for one management cluster).
	Selection PlanSelection `json:"selection"`
	// Rollout is how the waves are rolled (parallelism, failures allowed, gates).
	Rollout Rollout `json:"rollout"`
	// Plan is the waves, each cluster with what it was planned against and its steps, and the
	// clusters that could not be planned.
	Plan FleetPlan `json:"plan"`
	// Digest is "sha256:" and the hex SHA-256 of the file's canonical content (this object as
	// JSON with an empty digest): `apply --plan` refuses a file whose digest does not match.
	Digest string `json:"digest"`
}

// PlanSelection is the selection a plan was made with.
type PlanSelection struct {
	Namespace          string   `json:"namespace,omitempty"`
	Selector           string   `json:"selector,omitempty"`
	Wave               *int     `json:"wave,omitempty"`
	ManagementClusters []string `json:"managementClusters,omitempty"`
}

func (s PlanSelection) fleetSelection() FleetSelection {
	return FleetSelection{Namespace: s.Namespace, Selector: s.Selector, Wave: s.Wave}
}

// newPlanFile wraps a plan for saving, its digest computed.
func newPlanFile(plan *FleetPlan, sel FleetSelection, managementClusters []string, r Rollout) (*PlanFile, error) {
	pf := &PlanFile{
		APIVersion: PlanFileAPIVersion, Kind: PlanFileKind,
		Selection: PlanSelection{Namespace: sel.Namespace, Selector: sel.Selector, Wave: sel.Wave, ManagementClusters: managementClusters},
		Rollout:   r, Plan: *plan,
	}
	pf.Plan.Digest, pf.Plan.SavedTo = "", ""
	d, err := pf.digest()
	if err != nil {
		return nil, err
	}
	pf.Digest = d
	return pf, nil
}

// digest is the digest of the canonical content: the JSON encoding of the file with an empty
// digest.
func (pf PlanFile) digest() (string, error) {
	pf.Digest = ""
	return digest.JSON(pf)
}

// savePlanFile writes the plan to path through the project's private-file writer (0600) and
// records where and with which digest on plan.
func savePlanFile(path string, plan *FleetPlan, sel FleetSelection, managementClusters []string, r Rollout) error {
	pf, err := newPlanFile(plan, sel, managementClusters, r)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return err
	}
	if err := output.WritePrivateFile(path, append(data, '\n')); err != nil {
		return fmt.Errorf("saving the plan: %w", err)
	}
	plan.Digest, plan.SavedTo = pf.Digest, path
	return nil
}

// loadPlanFile reads a saved plan, bounded and strictly (an unknown field, a second document or
// another apiVersion/kind is refused). An edited file is not refused here: edited is its digest
// when its content no longer matches it (empty when it matches), so that the apply lists it with
// every other drift.
func loadPlanFile(ctx context.Context, path string) (pf *PlanFile, edited string, err error) {
	// A plan is a file capctl saved: a FIFO or a device would block the read (and Ctrl-C with it)
	// until someone writes to it, so only a regular file is read.
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, "", fmt.Errorf("plan file %s is not a regular file (%s): save the plan to a file with `capctl upgrade plan --kubernetes-version V --save FILE` and pass that", path, userinput.FileKind(st.Mode()))
	}
	data, err := userinput.ReadFile(ctx, path)
	if err != nil && userinput.IsTooLarge(err) {
		err = fmt.Errorf("plan file %s is larger than %s: it is not a plan capctl saved", path, userinput.Human(planFileMax))
	}
	if err == nil && int64(len(data)) > planFileMax {
		err = fmt.Errorf("plan file %s is larger than %s: it is not a plan capctl saved", path, userinput.Human(planFileMax))
	}
	if err != nil {
		return nil, "", fmt.Errorf("reading the plan: %w", err)
	}
	// A reviewed file: what runs must be what the reviewers read, so a key that is unknown, given
	// twice or a case variant of a known one (encoding/json would let it win) is refused.
	pf = &PlanFile{}
	var sk *userinput.StrictKeysError
	if err := userinput.DecodeJSONStrict(data, pf); errors.As(err, &sk) {
		return nil, "", fmt.Errorf("plan file %s is not as capctl saved it: %w; save the plan again with `capctl upgrade plan --kubernetes-version V --save %s`", path, err, path)
	} else if err != nil {
		return nil, "", fmt.Errorf("plan file %s is not a capctl plan (%s %s): %v; save one with `capctl upgrade plan --kubernetes-version V --save %s`", path, PlanFileAPIVersion, PlanFileKind, err, path)
	}
	if pf.APIVersion != PlanFileAPIVersion || pf.Kind != PlanFileKind {
		return nil, "", fmt.Errorf("plan file %s is apiVersion %q kind %q: this capctl reads apiVersion %s kind %s", path, pf.APIVersion, pf.Kind, PlanFileAPIVersion, PlanFileKind)
	}
	if pf.Plan.KubernetesVersion == "" {
		return nil, "", fmt.Errorf("plan file %s names no plan.kubernetesVersion", path)
	}
	want, err := pf.digest()
	if err != nil {
		return nil, "", err
	}
	if want != pf.Digest {
		edited = fmt.Sprintf("plan file %s was edited after it was saved: it says digest %s, its content is %s", path, orNone(pf.Digest), want)
	}
	return pf, edited, nil
}

// DriftError is `apply --plan` refused because the plan no longer matches the clusters (or the
// file was edited): every difference is listed; nothing was changed.
type DriftError struct {
	Path string
	// Before says when it was found: "before the first patch" or "before wave N".
	Before string
	Drifts []string
	// Remedy says how to make a new plan; empty: upgrade plan's.
	Remedy string
}

func (e *DriftError) Error() string {
	remedy := e.Remedy
	if remedy == "" {
		remedy = "make a new plan with `capctl upgrade plan --kubernetes-version ... --save`, review it, and apply that one"
	}
	return fmt.Sprintf("the plan %s no longer matches the clusters (checked %s), nothing more was changed:\n  - %s\n%s",
		e.Path, e.Before, strings.Join(e.Drifts, "\n  - "), remedy)
}

// planDrift compares the saved plan with a fresh plan of the same selection (live, built from
// infos) for the waves from index from on (earlier waves are done by this run) and lists every
// difference: a cluster added to the selection or gone from it, recreated (another UID), moved
// to another wave, its spec changed (metadata.generation), its versions changed by someone else,
// another ClusterClass, another upgrade path. A cluster whose versions moved along its planned
// path (an earlier run of this plan was stopped) is resumed, not a drift: its generation may
// then have grown with capctl's own patches (one per control plane step on a managed topology;
// none otherwise, capctl patches the control plane and worker objects then).
func planDrift(pf *PlanFile, live *FleetPlan, infos []ClusterInfo, from int) []string {
	var drifts []string
	byRef := map[string]ClusterInfo{}
	for _, in := range infos {
		byRef[in.ref()] = in
	}
	liveWave := map[string]string{}
	liveCluster := map[string]ClusterUpgrade{}
	for _, w := range live.Waves {
		for _, cu := range w.Clusters {
			liveWave[cu.Ref()], liveCluster[cu.Ref()] = w.Name(), cu
		}
	}
	liveUnplannable := map[string]string{}
	for _, u := range live.Unplannable {
		liveUnplannable[u.Ref()] = u.Reason
	}
	planned := map[string]bool{}
	for _, u := range pf.Plan.Unplannable {
		planned[u.Ref()] = true
	}
	for wi, w := range pf.Plan.Waves {
		for _, pc := range w.Clusters {
			ref := pc.Ref()
			planned[ref] = true
			if wi < from {
				continue
			}
			in, ok := byRef[ref]
			if !ok {
				drifts = append(drifts, fmt.Sprintf("cluster %s: gone from the selection (deleted, relabelled or moved since the plan)", ref))
				continue
			}
			if in.UID != pc.UID {
				drifts = append(drifts, fmt.Sprintf("cluster %s: recreated since the plan (UID %s, planned %s)", ref, in.UID, pc.UID))
				continue
			}
			if reason, bad := liveUnplannable[ref]; bad {
				drifts = append(drifts, fmt.Sprintf("cluster %s: cannot be planned any more: %s", ref, reason))
				continue
			}
			if lw := liveWave[ref]; lw != w.Name() {
				why := "its wave label changed"
				if lw == CanaryWave || w.Canary {
					// No label moved it: the canary is the first clusters of the selection in
					// order, and the selection changed around it.
					why = fmt.Sprintf("the canary is the first %d cluster(s) of the selection in order, and clusters were added to or removed from the selection", pf.Rollout.Canary)
				}
				drifts = append(drifts, fmt.Sprintf("cluster %s: now in wave %s, planned in wave %s (%s)", ref, lw, w.Name(), why))
			}
			if in.ClusterClass != pc.ClusterClass {
				drifts = append(drifts, fmt.Sprintf("cluster %s: ClusterClass is %s, planned %s", ref, orNone(in.ClusterClass), orNone(pc.ClusterClass)))
			}
			progressed, other := versionDrift(pc, liveCluster[ref])
			drifts = append(drifts, other...)
			if len(other) > 0 {
				continue
			}
			// capctl's own patches change a Cluster's spec only on a managed topology (its
			// spec.topology.version), at most once per control plane step.
			maxGeneration := pc.Generation
			if progressed && pc.ClusterClass != "" {
				for _, st := range pc.Steps {
					if st.Component == ControlPlane {
						maxGeneration++
					}
				}
			}
			if in.Generation < pc.Generation || in.Generation > maxGeneration {
				drifts = append(drifts, fmt.Sprintf("cluster %s: spec changed since the plan (metadata.generation %d, planned %d; resourceVersion %s, planned %s)", ref, in.Generation, pc.Generation, in.ResourceVersion, pc.ResourceVersion))
			}
			if progressed {
				continue
			}
			if a, b := fleetStepsLine(pc.Steps), fleetStepsLine(liveCluster[ref].Steps); a != b {
				drifts = append(drifts, fmt.Sprintf("cluster %s: upgrade path is now %s, planned %s", ref, b, a))
			}
		}
	}
	var added []string
	for _, in := range infos {
		if !planned[in.ref()] {
			added = append(added, in.ref())
		}
	}
	slices.Sort(added)
	for _, ref := range added {
		drifts = append(drifts, fmt.Sprintf("cluster %s: added to the selection since the plan", ref))
	}
	return drifts
}

// versionDrift tells whether the live cluster moved along its planned path (the planned
// versions, one of its steps' versions, or the target), and lists the versions that moved off it.
func versionDrift(pc, live ClusterUpgrade) (progressed bool, drifts []string) {
	onPath := func(component, planned, now string) bool {
		if now == planned {
			return true
		}
		for _, s := range pc.Steps {
			if s.Component == component && s.Version == now {
				progressed = true
				return true
			}
		}
		return false
	}
	ref := pc.Ref()
	if !onPath(ControlPlane, pc.ControlPlaneVersion, live.ControlPlaneVersion) {
		drifts = append(drifts, fmt.Sprintf("cluster %s: control plane is at %s, planned from %s (changed by someone else)", ref, live.ControlPlaneVersion, pc.ControlPlaneVersion))
	}
	// Topology workers follow the control plane's version (the topology controller sets them).
	if !onPath(Workers, pc.WorkersVersion, live.WorkersVersion) && !onPath(ControlPlane, pc.WorkersVersion, live.WorkersVersion) {
		drifts = append(drifts, fmt.Sprintf("cluster %s: workers are at %s, planned from %s (changed by someone else)", ref, live.WorkersVersion, pc.WorkersVersion))
	}
	return progressed, drifts
}

// fleetStepsLine is a cluster's steps as one line, for comparing paths.
func fleetStepsLine(steps []UpgradeStep) string {
	if len(steps) == 0 {
		return "(already up to date)"
	}
	parts := make([]string, 0, len(steps))
	for _, s := range steps {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " -> ")
}

// managementDrift compares the management clusters a plan spanned with this run's.
func managementDrift(pf *PlanFile, members []FleetMember) []string {
	var names []string
	for _, m := range members {
		if m.Name != "" {
			names = append(names, m.Name)
		}
	}
	want := append([]string(nil), pf.Selection.ManagementClusters...)
	slices.Sort(want)
	slices.Sort(names)
	if slices.Equal(want, names) {
		return nil
	}
	if len(want) == 0 {
		return []string{fmt.Sprintf("the plan was made on one management cluster, this run spans %s: run without --contexts/--all-contexts", strings.Join(names, ", "))}
	}
	return []string{fmt.Sprintf("the plan spans the management clusters %s, this run %s: run with --contexts %s", strings.Join(want, ","), orNone(strings.Join(names, ",")), strings.Join(want, ","))}
}
