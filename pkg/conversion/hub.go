package conversion

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	addonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"
	addonsv1beta2 "sigs.k8s.io/cluster-api/api/addons/v1beta2"
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"
	bootstrapv1beta2 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	controlplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1"
	controlplanev1beta2 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"
	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ipamv1alpha1 "sigs.k8s.io/cluster-api/api/ipam/v1alpha1"
	ipamv1beta1 "sigs.k8s.io/cluster-api/api/ipam/v1beta1"
	ipamv1beta2 "sigs.k8s.io/cluster-api/api/ipam/v1beta2"
	runtimev1alpha1 "sigs.k8s.io/cluster-api/api/runtime/v1alpha1"
	runtimev1beta2 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	dockerv1beta1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta1"
	dockerv1beta2 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"

	"github.com/capctl/capctl/pkg/contract"
)

// TargetVersion is the one version capctl converts to (clusterctl's --to-version accepts only it).
const TargetVersion = "v1beta2"

// scheme holds the upstream API types of every group capctl converts, with their registered
// conversion functions.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clusterv1beta1.AddToScheme, clusterv1beta2.AddToScheme,
		bootstrapv1beta1.AddToScheme, bootstrapv1beta2.AddToScheme,
		controlplanev1beta1.AddToScheme, controlplanev1beta2.AddToScheme,
		addonsv1beta1.AddToScheme, addonsv1beta2.AddToScheme,
		ipamv1alpha1.AddToScheme, ipamv1beta1.AddToScheme, ipamv1beta2.AddToScheme,
		runtimev1alpha1.AddToScheme, runtimev1beta2.AddToScheme,
		// The Docker provider (CAPD, with its in-memory Dev kinds): the provider of the quick
		// start and of the fixtures. Its v1beta1 types carry the upstream ConvertTo/ConvertFrom.
		dockerv1beta1.AddToScheme, dockerv1beta2.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}()

// convertible reports whether capctl has upstream conversion code from gvk to the target version.
func convertible(gvk schema.GroupVersionKind) bool {
	if gvk.Version == TargetVersion || !scheme.Recognizes(gvk) || strings.HasSuffix(gvk.Kind, "List") {
		return false
	}
	return scheme.Recognizes(gvk.GroupKind().WithVersion(TargetVersion))
}

// refMove is one reference upstream converts in the hub's ConvertTo rather than in the generated
// functions: a v1beta1 corev1.ObjectReference at From becomes a v1beta2
// ContractVersionedObjectReference (apiGroup, kind, name) at To.
type refMove struct{ From, To []string }

// boolMove is one status boolean the hub's ConvertTo moves (v1beta1 path → v1beta2 path).
type boolMove struct{ From, To []string }

// hubSteps are, per group/kind, the steps upstream implements in ConvertTo/ConvertFrom of the
// hub types; the generated conversion functions leave these fields empty.
var hubRefs = map[schema.GroupKind][]refMove{
	{Group: contract.Group, Kind: "Cluster"}: {
		{From: path("spec.infrastructureRef"), To: path("spec.infrastructureRef")},
		{From: path("spec.controlPlaneRef"), To: path("spec.controlPlaneRef")},
	},
	{Group: contract.Group, Kind: "Machine"}: {
		{From: path("spec.bootstrap.configRef"), To: path("spec.bootstrap.configRef")},
		{From: path("spec.infrastructureRef"), To: path("spec.infrastructureRef")},
	},
	{Group: contract.Group, Kind: "MachineSet"}:        templateRefs,
	{Group: contract.Group, Kind: "MachineDeployment"}: templateRefs,
	{Group: contract.Group, Kind: "MachinePool"}:       templateRefs,
	{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}: {
		{From: path("spec.machineTemplate.infrastructureRef"), To: path("spec.machineTemplate.spec.infrastructureRef")},
	},
}

var templateRefs = []refMove{
	{From: path("spec.template.spec.bootstrap.configRef"), To: path("spec.template.spec.bootstrap.configRef")},
	{From: path("spec.template.spec.infrastructureRef"), To: path("spec.template.spec.infrastructureRef")},
}

var hubBools = map[schema.GroupKind][]boolMove{
	{Group: contract.Group, Kind: "Cluster"}: {
		{From: path("status.infrastructureReady"), To: path("status.initialization.infrastructureProvisioned")},
		{From: path("status.controlPlaneReady"), To: path("status.initialization.controlPlaneInitialized")},
	},
	{Group: contract.Group, Kind: "Machine"}:     machineBools,
	{Group: contract.Group, Kind: "MachinePool"}: machineBools,
	{Group: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane"}: {
		{From: path("status.initialized"), To: path("status.initialization.controlPlaneInitialized")},
	},
	{Group: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfig"}: {
		{From: path("status.ready"), To: path("status.initialization.dataSecretCreated")},
	},
}

var machineBools = []boolMove{
	{From: path("status.bootstrapReady"), To: path("status.initialization.bootstrapDataSecretCreated")},
	{From: path("status.infrastructureReady"), To: path("status.initialization.infrastructureProvisioned")},
}

func path(s string) []string { return strings.Split(s, ".") }

// applyHubUp performs the hub steps on a converted object: in is the v1beta1 input, out the
// v1beta2 result of the generated conversion.
func applyHubUp(gk schema.GroupKind, in, out map[string]any) {
	for _, r := range hubRefs[gk] {
		ref, ok := nestedMap(in, r.From)
		if !ok {
			continue
		}
		v2 := map[string]any{}
		if av, _ := ref["apiVersion"].(string); av != "" {
			if gv, err := schema.ParseGroupVersion(av); err == nil {
				v2["apiGroup"] = gv.Group
			}
		}
		for _, k := range []string{"kind", "name"} {
			if s, _ := ref[k].(string); s != "" {
				v2[k] = s
			}
		}
		setNested(out, r.To, v2)
	}
	for _, b := range hubBools[gk] {
		if v, ok := nested(in, b.From); ok {
			setNested(out, b.To, v)
		}
	}
}

// versionOf gives the apiVersion a v1beta2 reference (apiGroup, kind) is written with when
// converting back to v1beta1.
type versionOf func(group, kind string) string

// applyHubDown is the reverse of applyHubUp on an object converted back: in is the v1beta2
// object, out the v1beta1 result of the generated conversion.
func applyHubDown(gk schema.GroupKind, in, out map[string]any, version versionOf) {
	ns, _ := nested(in, path("metadata.namespace"))
	for _, r := range hubRefs[gk] {
		ref, ok := nestedMap(in, r.To)
		if !ok {
			continue
		}
		group, _ := ref["apiGroup"].(string)
		kind, _ := ref["kind"].(string)
		v1 := map[string]any{}
		if av := version(group, kind); av != "" {
			v1["apiVersion"] = av
		}
		for _, k := range []string{"kind", "name"} {
			if s, _ := ref[k].(string); s != "" {
				v1[k] = s
			}
		}
		if s, _ := ns.(string); s != "" {
			v1["namespace"] = s
		}
		setNested(out, r.From, v1)
	}
	for _, b := range hubBools[gk] {
		if v, ok := nested(in, b.To); ok {
			setNested(out, b.From, v)
		}
	}
}

// defaultVersionOf writes references to Cluster API groups at v1beta1 (the version every
// Cluster API provider served alongside v1beta2) and keeps other groups' versions unknown.
func defaultVersionOf(group, _ string) string {
	if contract.IsClusterAPIGroup(group) {
		return group + "/v1beta1"
	}
	return ""
}
