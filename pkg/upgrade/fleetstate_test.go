package upgrade

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(kind, name string, labels map[string]string, fields map[string]any) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(2)}}}
	for k, v := range fields {
		u.Object[k] = v
	}
	if labels != nil {
		u.SetLabels(labels)
	}
	return u
}

func cond(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": typ + status}
}

// settled is a non-topology cluster at v1.34.1 as the controllers report it when done.
func settled() ClusterState {
	cl := obj("Cluster", "c1", nil, map[string]any{"status": map[string]any{"conditions": []any{cond("Available", "True")}}})
	cp := obj("KubeadmControlPlane", "c1-cp", nil, map[string]any{
		"spec":   map[string]any{"version": "v1.34.1", "replicas": int64(1)},
		"status": map[string]any{"version": "v1.34.1", "replicas": int64(1), "upToDateReplicas": int64(1), "observedGeneration": int64(2)},
	})
	md := obj("MachineDeployment", "c1-md", nil, map[string]any{
		"spec":   map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"version": "v1.34.1"}}},
		"status": map[string]any{"replicas": int64(2), "upToDateReplicas": int64(2), "observedGeneration": int64(2)},
	})
	m := func(name string, l map[string]string) unstructured.Unstructured {
		return obj("Machine", name, l, map[string]any{"spec": map[string]any{"version": "v1.34.1"}, "status": map[string]any{"conditions": []any{cond("UpToDate", "True")}}})
	}
	return ClusterState{
		Cluster: &cl, ControlPlane: &cp, Workers: []unstructured.Unstructured{md},
		Machines: []unstructured.Unstructured{
			m("cp-1", map[string]string{controlPlaneMachineLabel: ""}),
			m("md-1", map[string]string{deploymentNameLabel: "c1-md"}), m("md-2", map[string]string{deploymentNameLabel: "c1-md"}),
		},
	}
}

func TestStepDone(t *testing.T) {
	cases := []struct {
		name      string
		mutate    func(s *ClusterState)
		component string
		version   string
		want      string // "" means done
	}{
		{"settled control plane step", func(*ClusterState) {}, ControlPlane, "v1.34.1", ""},
		{"settled workers step", func(*ClusterState) {}, Workers, "v1.34.1", ""},
		{"control plane not patched yet", func(*ClusterState) {}, ControlPlane, "v1.35.0", "KubeadmControlPlane c1-cp spec.version is v1.34.1, not v1.35.0"},
		{"workers not patched yet", func(*ClusterState) {}, Workers, "v1.35.0", "MachineDeployment c1-md template version is v1.34.1"},
		{"control plane still rolling", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, int64(0), "status", "upToDateReplicas")
		}, ControlPlane, "v1.35.0", "reports version v1.34.1, wants v1.35.0"},
		{"old control plane machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
		}, ControlPlane, "v1.35.0", "Machine cp-1 runs v1.34.1, wants v1.35.0"},
		{"status from an older generation", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, int64(1), "status", "observedGeneration")
		}, ControlPlane, "v1.34.1", "has not observed its latest spec yet"},
		{"cluster not available", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{map[string]any{"type": "Available", "status": "False", "message": "* ControlPlaneAvailable: not yet"}}, "status", "conditions")
		}, ControlPlane, "v1.34.1", "Cluster Available is False: * ControlPlaneAvailable: not yet"},
		{"availability not reported", func(s *ClusterState) { delete(s.Cluster.Object, "status") }, ControlPlane, "v1.34.1", "Available is not reported yet"},
		{"worker not up to date", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Machines[2].Object, []any{cond("UpToDate", "False")}, "status", "conditions")
		}, Workers, "v1.34.1", "Machine md-2 UpToDate is False: UpToDateFalse"},
		{"a replica missing", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Workers[0].Object, int64(1), "status", "replicas")
		}, Workers, "v1.34.1", "MachineDeployment c1-md has 1 replicas, wants 2"},
		{"machine being deleted", func(s *ClusterState) { s.Machines[1].SetDeletionTimestamp(&metaNow) }, Workers, "v1.34.1", "Machine md-1 is being deleted"},
		{"topology version not set", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
		}, ControlPlane, "v1.35.0", "Cluster spec.topology.version is v1.34.1, not v1.35.0"},
		{"topology settled includes workers", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "True"), cond("TopologyReconciled", "True")}, "status", "conditions")
		}, ControlPlane, "v1.34.1", ""},
		{"topology controller still propagating", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": "v1.34.1"}, "spec", "topology")
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "True"),
				map[string]any{"type": "TopologyReconciled", "status": "False", "message": "Cluster is upgrading to v1.34.1"}}, "status", "conditions")
		}, ControlPlane, "v1.34.1", "Cluster TopologyReconciled is False: Cluster is upgrading to v1.34.1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := settled()
			tc.mutate(&s)
			done, why := StepDone(s, tc.component, tc.version)
			if tc.want == "" {
				if !done {
					t.Fatalf("not done: %q", why)
				}
				return
			}
			if done {
				t.Fatalf("done, want not done because %q", tc.want)
			}
			if !strings.Contains(strings.Join(why, "\n"), tc.want) {
				t.Errorf("reasons %q\nwant one containing %q", why, tc.want)
			}
		})
	}
}

var metaNow = metav1.Now()

func TestRolloutUnderWay(t *testing.T) {
	topology := func(v string) func(s *ClusterState) {
		return func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Cluster.Object, map[string]any{"version": v}, "spec", "topology")
		}
	}
	cases := []struct {
		name      string
		mutate    func(s *ClusterState)
		component string
		version   string
	}{
		{"settled", func(*ClusterState) {}, "", ""},
		{"settled topology", topology("v1.34.1"), "", ""},
		{"not Available and scaling up is no version change", func(s *ClusterState) {
			_ = unstructured.SetNestedSlice(s.Cluster.Object, []any{cond("Available", "False")}, "status", "conditions")
			_ = unstructured.SetNestedField(s.Workers[0].Object, int64(3), "spec", "replicas")
		}, "", ""},
		{"control plane set, not reported yet", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
		}, ControlPlane, "v1.35.0"},
		{"control plane reported, its old machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
		}, ControlPlane, "v1.35.0"},
		{"topology set, the control plane not told yet", topology("v1.35.0"), ControlPlane, "v1.35.0"},
		{"topology: control plane done, workers not told yet", func(s *ClusterState) {
			topology("v1.35.0")(s)
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "spec", "version")
			_ = unstructured.SetNestedField(s.ControlPlane.Object, "v1.35.0", "status", "version")
			_ = unstructured.SetNestedField(s.Machines[0].Object, "v1.35.0", "spec", "version")
		}, Workers, "v1.35.0"},
		{"workers set, an old worker machine left", func(s *ClusterState) {
			_ = unstructured.SetNestedField(s.Workers[0].Object, "v1.35.0", "spec", "template", "spec", "version")
			_ = unstructured.SetNestedField(s.Machines[1].Object, "v1.35.0", "spec", "version")
		}, Workers, "v1.35.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := settled()
			tc.mutate(&s)
			if c, v := RolloutUnderWay(s); c != tc.component || v != tc.version {
				t.Errorf("RolloutUnderWay = %q %q, want %q %q", c, v, tc.component, tc.version)
			}
		})
	}
}
