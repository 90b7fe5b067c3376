// Package cutovertest holds what the v1beta1 cut-over check's tests share: a ClusterClass patch
// written for v1beta1.
package cutovertest

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// AuditPath is the path of the patch: a map key in v1beta1's KubeadmControlPlaneTemplate, where
// v1beta2 has a list of {name, value} arguments.
const AuditPath = "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs/audit-log-maxage"

// AddAuditPatch sets a ClusterClass's patches to one patch, "audit", written for v1beta1: its
// selector names the v1beta1 KubeadmControlPlaneTemplate of the control plane, its path AuditPath.
func AddAuditPatch(cc *unstructured.Unstructured) error {
	return unstructured.SetNestedSlice(cc.Object, []any{map[string]any{
		"name": "audit",
		"definitions": []any{map[string]any{
			"selector":    map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta1", "kind": "KubeadmControlPlaneTemplate", "matchResources": map[string]any{"controlPlane": true}},
			"jsonPatches": []any{map[string]any{"op": "add", "path": AuditPath, "value": "30"}},
		}},
	}}, "spec", "patches")
}
