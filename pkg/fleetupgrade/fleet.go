package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/versions"
)

// Labels that order the fleet plan. WaveLabel wins when a Cluster carries both.
const (
	WaveLabel      = "capctl.io/upgrade-wave"
	PlainWaveLabel = "upgrade-wave"
	// ClusterNameLabel ties MachineDeployments and MachinePools to their Cluster.
	ClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	// MaxKubeletSkew is how many minors a kubelet may lag behind the API server (Kubernetes'
	// version skew policy since v1.28).
	MaxKubeletSkew = 3
)

// Step components.
const (
	ControlPlane = "ControlPlane"
	Workers      = "Workers"
)

// FleetPlan is the Kubernetes upgrade plan of every workload cluster of a management cluster.
type FleetPlan struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	// RolloutAfter is the time of a machine rotation (then KubernetesVersion is empty).
	RolloutAfter string `json:"rolloutAfter,omitempty"`
	// ClassRebase is a ClusterClass rebase, "namespace/old -> new" (then KubernetesVersion is
	// empty).
	ClassRebase string `json:"classRebase,omitempty"`
	// Waves in upgrade order: numbered waves ascending, then clusters without a wave label.
	Waves []FleetWave `json:"waves"`
	// Unplannable clusters, with why.
	Unplannable []UnplannableCluster `json:"unplannable"`
	// Digest and SavedTo are set when the plan was saved (--save): the plan file's digest and
	// path.
	Digest  string `json:"digest,omitempty"`
	SavedTo string `json:"savedTo,omitempty"`
}

// FleetPlanRequest is `capctl upgrade plan --kubernetes-version`: one request, one call.
type FleetPlanRequest struct {
	KubernetesVersion string
	Selection         FleetSelection
	// Rollout is how `apply --plan` will roll the waves; it shapes the waves (--canary) and is
	// saved with the plan.
	Rollout Rollout
	// Save, when set, writes the plan to this file (mode 0600) for `upgrade apply --plan`.
	Save string
}

// FleetWave is the clusters sharing one upgrade-wave label value.
type FleetWave struct {
	// Wave is the label value; nil for clusters without the label (they come last).
	Wave *int `json:"wave"`
	// Canary is set on the first wave --canary makes.
	Canary   bool             `json:"canary,omitempty"`
	Clusters []ClusterUpgrade `json:"clusters"`
}

// Name is how the wave is shown: its number, "canary", or "-" for clusters without the label.
func (w FleetWave) Name() string {
	if w.Canary {
		return CanaryWave
	}
	if w.Wave == nil {
		return "-"
	}
	return strconv.Itoa(*w.Wave)
}

// ClusterUpgrade is one cluster's path to the target version.
type ClusterUpgrade struct {
	// ManagementCluster is the kubeconfig context of the cluster's management cluster when the
	// fleet spans several (--contexts/--all-contexts); empty for one management cluster.
	ManagementCluster string `json:"managementCluster,omitempty"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	// ClusterClass is `namespace/name` for clusters with a managed topology.
	ClusterClass        string `json:"clusterClass,omitempty"`
	ControlPlaneVersion string `json:"controlPlaneVersion"`
	// WorkersVersion is the oldest version among the cluster's MachineDeployments and
	// MachinePools (the control plane version when it has none).
	WorkersVersion string        `json:"workersVersion"`
	UpToDate       bool          `json:"upToDate"`
	Steps          []UpgradeStep `json:"steps"`
	// UID, Generation and ResourceVersion are the Cluster's as the plan read it: what a saved
	// plan is compared with before it is applied (see PlanFile).
	UID             string `json:"uid,omitempty"`
	Generation      int64  `json:"generation,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// UpgradeStep is one version change of the control plane or of the workers.
type UpgradeStep struct {
	Component string `json:"component"` // ControlPlane or Workers
	// Version is the version to set. When AnyPatch is true it is `vX.Y.x`: the newest patch of
	// that minor (the ClusterClass does not list versions, so capctl cannot name one).
	Version  string `json:"version"`
	AnyPatch bool   `json:"anyPatch,omitempty"`
}

func (s UpgradeStep) String() string {
	switch s.Component {
	case Workers:
		return "workers " + s.Version
	case Machines:
		return "machines rollout.after " + s.Version
	case ClassComponent:
		return "ClusterClass " + s.Version
	}
	return "control plane " + s.Version
}

// UnplannableCluster is a cluster capctl cannot plan, and why.
type UnplannableCluster struct {
	ManagementCluster string `json:"managementCluster,omitempty"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Version           string `json:"version,omitempty"`
	Wave              string `json:"wave,omitempty"`
	Reason            string `json:"reason"`
}

// ClusterInfo is what the fleet plan needs to know about one cluster.
type ClusterInfo struct {
	// ManagementCluster is the context of the management cluster the cluster was read from when
	// the fleet spans several; empty for one.
	ManagementCluster string
	Namespace, Name   string
	Labels            map[string]string
	// ClusterClass is `namespace/name` when the cluster has a managed topology.
	ClusterClass string
	// ClassVersions is the ClusterClass's spec.kubernetesVersions (nil: not set).
	ClassVersions []string
	// ClassMissing is set when the cluster's ClusterClass does not exist.
	ClassMissing bool
	// ControlPlaneVersion is spec.topology.version or the control plane's spec.version.
	ControlPlaneVersion string
	// VersionProblem explains why ControlPlaneVersion is empty.
	VersionProblem string
	// WorkerVersions are the versions of the cluster's MachineDeployments and MachinePools.
	WorkerVersions []string
	// UID, Generation (metadata.generation: it changes with the spec) and ResourceVersion of
	// the Cluster as read.
	UID             string
	Generation      int64
	ResourceVersion string
}

// PlanFleet reads the Clusters of the management cluster that sel picks (namespace and label
// selector; the apply uses the same selection) and plans their upgrade to target.
func PlanFleet(ctx context.Context, c client.Reader, mapper meta.RESTMapper, req FleetPlanRequest) (*FleetPlan, error) {
	t, err := req.resolve()
	if err != nil {
		return nil, err
	}
	infos, err := readSelected(ctx, c, mapper, "", req.Selection)
	if err != nil {
		return nil, err
	}
	plan, err := planWaves(infos, versionUpgrade{t}, req.Rollout)
	if err != nil {
		return nil, err
	}
	if req.Save != "" {
		if err := savePlanFile(req.Save, plan, req.Selection, nil, req.Rollout); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// Complete validates the request (Validate) and writes its version as vX.Y.Z (1.34.1 and
// v1.34.1 alike), without any I/O: what a command calls once its flags are parsed.
func (req *FleetPlanRequest) Complete() error {
	v, err := req.resolve()
	if err != nil {
		return err
	}
	req.KubernetesVersion = v.written
	return nil
}

// Validate checks the request without any I/O: the version, the selection, the rollout and that
// a saved plan is not limited to a wave; its errors name the flags.
func (req FleetPlanRequest) Validate() error {
	_, err := req.resolve()
	return err
}

// resolve checks the request (Validate) and returns its version, parsed once for the planning.
func (req FleetPlanRequest) resolve() (target, error) {
	v, err := resolveTarget(req.KubernetesVersion)
	if err != nil {
		return v, err
	}
	if req.Selection.Wave != nil && req.Save != "" {
		return v, fmt.Errorf("a saved plan covers every wave of the selection: --save cannot be combined with --wave")
	}
	if _, err := SelectFleet(nil, req.Selection); err != nil { // a bad selector fails before any read
		return v, err
	}
	return v, req.Rollout.Validate()
}

// target is the Kubernetes version a fleet is upgraded to, resolved once: as it is written into
// the clusters (vX.Y.Z, however it was typed) and parsed.
type target struct {
	written string
	parsed  *semver.Version
}

// resolveTarget reads a version as every command accepts it (1.35.1 and v1.35.1 alike).
func resolveTarget(s string) (target, error) {
	w, p, err := versions.Kubernetes(s)
	return target{written: w, parsed: p}, err
}

// planWaves is the plan of the change to infos, its waves shaped by the rollout (--canary): what
// the plan shows and saves, and what the apply rolls.
func planWaves(infos []ClusterInfo, ch fleetChange, r Rollout) (*FleetPlan, error) {
	plan := buildPlan(infos, ch)
	return plan, r.shape(plan)
}

// readSelected reads one management cluster's fleet and keeps what sel picks, each cluster
// tagged with the management cluster's context (empty for one management cluster): what the
// plan and the apply read of every management cluster.
func readSelected(ctx context.Context, c client.Reader, mapper meta.RESTMapper, management string, sel FleetSelection) ([]ClusterInfo, error) {
	all, err := ReadFleet(ctx, c, mapper)
	if err != nil {
		return nil, err
	}
	infos, err := SelectFleet(all, sel)
	if err != nil {
		return nil, err
	}
	for i := range infos {
		infos[i].ManagementCluster = management
	}
	return infos, nil
}

// clusterRef names a cluster in messages and keys: "ns/name", and "ns/name on eu-1" when the
// fleet spans several management clusters.
func clusterRef(management, namespace, name string) string {
	if management == "" {
		return namespace + "/" + name
	}
	return namespace + "/" + name + " on " + management
}

// Ref is the cluster's name in messages: "ns/name", or "ns/name on eu-1" over several
// management clusters.
func (c ClusterUpgrade) Ref() string { return clusterRef(c.ManagementCluster, c.Namespace, c.Name) }

// Ref is the cluster's name in messages (see ClusterUpgrade.Ref).
func (c UnplannableCluster) Ref() string {
	return clusterRef(c.ManagementCluster, c.Namespace, c.Name)
}

func (c ClusterInfo) ref() string { return clusterRef(c.ManagementCluster, c.Namespace, c.Name) }

// ReadFleet reads the clusters, their ClusterClasses, control planes and workers.
func ReadFleet(ctx context.Context, c client.Reader, mapper meta.RESTMapper) ([]ClusterInfo, error) {
	clusters, err := listCAPI(ctx, c, "Cluster")
	if err != nil {
		if errors.Is(err, errKindNotServed) {
			return nil, fmt.Errorf("the management cluster does not serve %s/v1beta2 Clusters: install Cluster API with `capctl init` (or point --kubeconfig at the management cluster)", contract.Group)
		}
		return nil, err
	}
	if len(clusters) == 0 {
		return nil, nil
	}
	classes := map[string][]string{}
	classFound := map[string]bool{}
	if items, err := listCAPI(ctx, c, "ClusterClass"); err == nil {
		for _, cc := range items {
			key := cc.GetNamespace() + "/" + cc.GetName()
			classFound[key] = true
			if v, ok, _ := unstructured.NestedStringSlice(cc.Object, "spec", "kubernetesVersions"); ok {
				classes[key] = v
			}
		}
	} else if !errors.Is(err, errKindNotServed) {
		return nil, err
	}
	workers := map[string][]string{}
	for _, kind := range []string{"MachineDeployment", "MachinePool"} {
		items, err := listCAPI(ctx, c, kind)
		if errors.Is(err, errKindNotServed) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			cl := it.GetLabels()[ClusterNameLabel]
			if cl == "" {
				continue
			}
			if v, _, _ := unstructured.NestedString(it.Object, "spec", "template", "spec", "version"); v != "" {
				key := it.GetNamespace() + "/" + cl
				workers[key] = append(workers[key], v)
			}
		}
	}

	out := make([]ClusterInfo, 0, len(clusters))
	for i := range clusters {
		cl := &clusters[i]
		info := ClusterInfo{Namespace: cl.GetNamespace(), Name: cl.GetName(), Labels: cl.GetLabels(),
			UID: string(cl.GetUID()), Generation: cl.GetGeneration(), ResourceVersion: cl.GetResourceVersion()}
		info.WorkerVersions = workers[info.Namespace+"/"+info.Name]
		if topo, ok, _ := unstructured.NestedMap(cl.Object, "spec", "topology"); ok && topo != nil {
			name, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "name")
			ns, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "classRef", "namespace")
			if ns == "" {
				ns = info.Namespace
			}
			if name != "" {
				info.ClusterClass = ns + "/" + name
				info.ClassVersions = classes[info.ClusterClass]
				info.ClassMissing = !classFound[info.ClusterClass]
			}
			info.ControlPlaneVersion, _, _ = unstructured.NestedString(cl.Object, "spec", "topology", "version")
			if info.ControlPlaneVersion == "" {
				info.VersionProblem = "spec.topology.version is empty"
			}
		} else {
			info.ControlPlaneVersion, info.VersionProblem = controlPlaneVersion(ctx, c, mapper, cl)
		}
		out = append(out, info)
	}
	return out, nil
}

var errKindNotServed = errors.New("kind not served")

func listCAPI(ctx context.Context, c client.Reader, kind string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: contract.Group, Version: "v1beta2", Kind: kind + "List"})
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, errKindNotServed
		}
		return nil, fmt.Errorf("listing %s/v1beta2 %ss: %w", contract.Group, kind, err)
	}
	return list.Items, nil
}

// controlPlaneVersion reads spec.version of the object spec.controlPlaneRef names (v1beta2:
// apiGroup/kind/name in the cluster's namespace).
func controlPlaneVersion(ctx context.Context, c client.Reader, mapper meta.RESTMapper, cl *unstructured.Unstructured) (string, string) {
	ref, ok, _ := unstructured.NestedStringMap(cl.Object, "spec", "controlPlaneRef")
	if !ok || ref["name"] == "" || ref["kind"] == "" {
		return "", "no spec.topology and no spec.controlPlaneRef: the cluster has no Kubernetes version to upgrade"
	}
	gk := schema.GroupKind{Group: ref["apiGroup"], Kind: ref["kind"]}
	if gk.Group == "" && ref["apiVersion"] != "" {
		if gv, err := schema.ParseGroupVersion(ref["apiVersion"]); err == nil {
			gk.Group = gv.Group
		}
	}
	m, err := mapper.RESTMapping(gk)
	if err != nil {
		return "", fmt.Sprintf("control plane kind %s is not served by the management cluster", gk.String())
	}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(m.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.GetNamespace(), Name: ref["name"]}, cp); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Sprintf("control plane %s %s not found", gk.Kind, ref["name"])
		}
		return "", fmt.Sprintf("reading control plane %s %s: %v", gk.Kind, ref["name"], err)
	}
	v, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
	if v == "" {
		return "", fmt.Sprintf("control plane %s %s has no spec.version", gk.Kind, ref["name"])
	}
	return v, ""
}

// BuildFleetPlan plans every cluster to version (pure: no cluster access).
func BuildFleetPlan(infos []ClusterInfo, version string) (*FleetPlan, error) {
	t, err := resolveTarget(version)
	if err != nil {
		return nil, err
	}
	return buildPlan(infos, versionUpgrade{t}), nil
}

// buildPlan plans the change of every cluster, in waves.
func buildPlan(infos []ClusterInfo, ch fleetChange) *FleetPlan {
	plan := &FleetPlan{Waves: []FleetWave{}, Unplannable: []UnplannableCluster{}}
	ch.head(plan)
	waves := map[string]*FleetWave{}
	sel, _ := ch.(selector)
	for _, info := range infos {
		if sel != nil && !sel.selects(info) {
			continue
		}
		waveStr, wave, werr := clusterWave(info.Labels)
		cu, reason := ch.planCluster(info)
		if werr != "" {
			reason = werr
		}
		if reason != "" {
			plan.Unplannable = append(plan.Unplannable, UnplannableCluster{
				ManagementCluster: info.ManagementCluster, Namespace: info.Namespace, Name: info.Name, Version: info.ControlPlaneVersion, Wave: waveStr, Reason: reason,
			})
			continue
		}
		key := "-"
		if wave != nil {
			key = strconv.Itoa(*wave)
		}
		w := waves[key]
		if w == nil {
			w = &FleetWave{Wave: wave}
			waves[key] = w
		}
		w.Clusters = append(w.Clusters, cu)
	}
	for _, w := range waves {
		sort.Slice(w.Clusters, func(i, j int) bool {
			a, b := &w.Clusters[i], &w.Clusters[j]
			return multicluster.ComparePlace(a.ManagementCluster, a.Namespace, a.Name, b.ManagementCluster, b.Namespace, b.Name) < 0
		})
		plan.Waves = append(plan.Waves, *w)
	}
	sort.Slice(plan.Waves, func(i, j int) bool {
		a, b := plan.Waves[i].Wave, plan.Waves[j].Wave
		if a == nil || b == nil {
			return b == nil && a != nil
		}
		return *a < *b
	})
	sort.Slice(plan.Unplannable, func(i, j int) bool {
		a, b := &plan.Unplannable[i], &plan.Unplannable[j]
		return multicluster.ComparePlace(a.ManagementCluster, a.Namespace, a.Name, b.ManagementCluster, b.Namespace, b.Name) < 0
	})
	return plan
}

// clusterWave reads the wave label: capctl.io/upgrade-wave, else upgrade-wave.
func clusterWave(labels map[string]string) (string, *int, string) {
	for _, key := range []string{WaveLabel, PlainWaveLabel} {
		v, ok := labels[key]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return v, nil, fmt.Sprintf("label %s=%q is not an integer wave number", key, v)
		}
		return v, &n, ""
	}
	return "", nil, ""
}

// parseClusterVersion reads a version found in a cluster's objects (either spelling).
func parseClusterVersion(v string) (*semver.Version, error) {
	sv, err := versions.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("version %q is not a Kubernetes version like v1.32.3", v)
	}
	return sv, nil
}

// planCluster returns the cluster's plan, or why it cannot be planned.
func planCluster(info ClusterInfo, target *semver.Version) (ClusterUpgrade, string) {
	cu := ClusterUpgrade{ManagementCluster: info.ManagementCluster, Namespace: info.Namespace, Name: info.Name, ClusterClass: info.ClusterClass, ControlPlaneVersion: info.ControlPlaneVersion,
		UID: info.UID, Generation: info.Generation, ResourceVersion: info.ResourceVersion}
	if info.VersionProblem != "" {
		return cu, info.VersionProblem
	}
	cur, err := parseClusterVersion(info.ControlPlaneVersion)
	if err != nil {
		return cu, "control plane " + err.Error()
	}
	// The oldest worker decides when workers must move.
	wv := cur
	cu.WorkersVersion = info.ControlPlaneVersion
	for _, s := range info.WorkerVersions {
		v, err := parseClusterVersion(s)
		if err != nil {
			return cu, "workers' " + err.Error()
		}
		if v.LessThan(wv) {
			wv, cu.WorkersVersion = v, s
		}
	}
	tv := versions.Canonical(target)
	switch {
	case cur.GreaterThan(target):
		return cu, fmt.Sprintf("the control plane runs %s, newer than %s: Kubernetes cannot be downgraded", info.ControlPlaneVersion, tv)
	case cur.Major() != target.Major():
		return cu, fmt.Sprintf("%s to %s changes the major version: there is no supported path", info.ControlPlaneVersion, tv)
	case wv.Minor()+MaxKubeletSkew < cur.Minor():
		return cu, fmt.Sprintf("workers at %s are more than %d minors behind the control plane %s: fix the skew first", cu.WorkersVersion, MaxKubeletSkew, info.ControlPlaneVersion)
	}
	if info.ClassMissing {
		return cu, fmt.Sprintf("ClusterClass %s not found", info.ClusterClass)
	}

	// The control plane's path: one step per minor, then the target.
	var cpPath []UpgradeStep
	if info.ClassVersions != nil {
		listed := map[string]bool{}
		newest := map[uint64]*semver.Version{} // minor → newest listed version
		for _, s := range info.ClassVersions {
			v, err := parseClusterVersion(s)
			if err != nil {
				return cu, fmt.Sprintf("ClusterClass %s lists %q in spec.kubernetesVersions, which is not a version", info.ClusterClass, s)
			}
			listed["v"+v.String()] = true
			if v.Major() == target.Major() && (newest[v.Minor()] == nil || v.GreaterThan(newest[v.Minor()])) {
				newest[v.Minor()] = v
			}
		}
		if !listed["v"+cur.String()] {
			return cu, fmt.Sprintf("ClusterClass %s does not list the current version %s in spec.kubernetesVersions", info.ClusterClass, info.ControlPlaneVersion)
		}
		if !listed[tv] {
			return cu, fmt.Sprintf("ClusterClass %s does not list %s in spec.kubernetesVersions (it lists %s)", info.ClusterClass, tv, strings.Join(info.ClassVersions, ", "))
		}
		for m := cur.Minor() + 1; m < target.Minor(); m++ {
			v := newest[m]
			if v == nil {
				return cu, fmt.Sprintf("ClusterClass %s lists no v%d.%d version, and Kubernetes cannot skip a minor", info.ClusterClass, target.Major(), m)
			}
			cpPath = append(cpPath, UpgradeStep{Component: ControlPlane, Version: "v" + v.String()})
		}
	} else {
		for m := cur.Minor() + 1; m < target.Minor(); m++ {
			cpPath = append(cpPath, UpgradeStep{Component: ControlPlane, Version: fmt.Sprintf("v%d.%d.x", target.Major(), m), AnyPatch: true})
		}
	}
	if !cur.Equal(target) {
		cpPath = append(cpPath, UpgradeStep{Component: ControlPlane, Version: tv})
	}

	// Workers follow at the target, or earlier where the control plane would otherwise move more
	// than MaxKubeletSkew minors ahead of them.
	cu.Steps = []UpgradeStep{}
	workerMinor := wv.Minor()
	cpNow := UpgradeStep{Component: ControlPlane, Version: info.ControlPlaneVersion}
	for _, s := range cpPath {
		if minorOf(s.Version) > workerMinor+MaxKubeletSkew {
			cu.Steps = append(cu.Steps, UpgradeStep{Component: Workers, Version: cpNow.Version, AnyPatch: cpNow.AnyPatch})
			workerMinor = minorOf(cpNow.Version)
		}
		cu.Steps = append(cu.Steps, s)
		cpNow = s
	}
	if !wv.Equal(target) {
		cu.Steps = append(cu.Steps, UpgradeStep{Component: Workers, Version: tv})
	}
	cu.UpToDate = len(cu.Steps) == 0
	return cu, ""
}

// minorOf reads the minor of `vX.Y.Z` or `vX.Y.x`.
func minorOf(v string) uint64 {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.ParseUint(parts[1], 10, 64)
	return n
}
