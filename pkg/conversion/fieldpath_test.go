package conversion

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestFieldPath(t *testing.T) {
	kcpt := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: v, Kind: "KubeadmControlPlaneTemplate"}
	}
	dmt := func(v string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: v, Kind: "DockerMachineTemplate"}
	}
	extraArg := "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs/v"
	cases := []struct {
		name    string
		gvk     schema.GroupVersionKind
		pointer string
		want    PathResult
		prefix  string
	}{
		{"a map key in v1beta1", kcpt("v1beta1"), extraArg, PathExists, extraArg},
		{"the same key where v1beta2 has a list", kcpt("v1beta2"), extraArg, PathMissing,
			"/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs"},
		{"a list entry in v1beta2", kcpt("v1beta2"), "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs/-", PathExists, ""},
		{"a list index and its field", kcpt("v1beta2"), "/spec/template/spec/kubeadmConfigSpec/files/0/content", PathExists, ""},
		{"an appended list entry", kcpt("v1beta1"), "/spec/template/spec/kubeadmConfigSpec/files/-", PathExists, ""},
		{"a field v1beta2 removed", kcpt("v1beta2"), "/spec/template/spec/kubeadmConfigSpec/useExperimentalRetryJoin", PathMissing, "/spec/template/spec/kubeadmConfigSpec"},
		{"that field in v1beta1", kcpt("v1beta1"), "/spec/template/spec/kubeadmConfigSpec/useExperimentalRetryJoin", PathExists, ""},
		{"metadata labels (an inlined struct's map)", kcpt("v1beta2"), "/spec/template/metadata/labels/a~1b", PathExists, ""},
		{"nothing below a scalar", dmt("v1beta2"), "/spec/template/spec/customImage/x", PathMissing, "/spec/template/spec/customImage"},
		{"an unknown field", dmt("v1beta2"), "/spec/template/spec/nope", PathMissing, "/spec/template/spec"},
		{"a relative pointer", dmt("v1beta2"), "spec/template", PathMissing, ""},
		{"a kind capctl has no type for", schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "AWSMachineTemplate"}, "/spec", UnknownKind, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, prefix := FieldPath(c.gvk, c.pointer)
			if got != c.want {
				t.Fatalf("FieldPath(%s, %q) = %v, want %v", c.gvk.Kind, c.pointer, got, c.want)
			}
			if c.want == PathMissing && prefix != c.prefix {
				t.Errorf("deepest resolving prefix = %q, want %q", prefix, c.prefix)
			}
		})
	}
}
