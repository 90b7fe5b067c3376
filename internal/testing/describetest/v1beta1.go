package describetest

import (
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// V1Beta1CRDs is the file of small CRDs serving Cluster API kinds at v1beta1 only.
func V1Beta1CRDs() string {
	return filepath.Join(testenv.RepoRoot(), "internal", "testing", "describetest", "testdata", "v1beta1-crds.yaml")
}

const (
	coreV1b1  = "cluster.x-k8s.io/v1beta1"
	cpV1b1    = "controlplane.cluster.x-k8s.io/v1beta1"
	bootV1b1  = "bootstrap.cluster.x-k8s.io/v1beta1"
	infraV1b1 = "infrastructure.cluster.x-k8s.io/v1beta1"
)

func refV1b1(apiVersion, kind, ns, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": ns, "name": name}
}

// v1b1Status is a v1beta1 status: v1beta1 conditions (with severity) in status.conditions and
// the v1beta2 conditions and counters under status.v1beta2.
func v1b1Status(old, new []C, extra map[string]any, v1beta2 map[string]any) map[string]any {
	st := map[string]any{"conditions": conds(old, true)}
	for k, v := range extra {
		st[k] = v
	}
	v2 := map[string]any{"conditions": conds(new, false)}
	for k, v := range v1beta2 {
		v2[k] = v
	}
	st["v1beta2"] = v2
	return st
}

// V1Beta1Only is a cluster on a management cluster that serves only v1beta1 (install
// V1Beta1CRDs): references carry apiVersion, conditions have severities.
func V1Beta1Only() *Scenario {
	s := &Scenario{Namespace: "legacy", Cluster: "old"}
	ns, cl := s.Namespace, s.Cluster
	b := &builder{s}
	notReady := []C{{Type: "Ready", Status: "False", Reason: "WaitingForNodeRef", Ago: 15 * time.Minute}}
	readyOld := []C{{Type: "Ready", Status: "True", Ago: time.Hour}}
	b.add(Obj(coreV1b1, "Cluster", ns, cl, nil, map[string]any{
		"infrastructureRef": refV1b1(infraV1b1, "DockerCluster", ns, cl),
		"controlPlaneRef":   refV1b1(cpV1b1, "KubeadmControlPlane", ns, cl+"-cp"),
	}, v1b1Status(
		[]C{{Type: "Ready", Status: "False", Reason: "ScalingUp", Message: "Scaling up control plane to 3 replicas (actual 2)", Ago: 15 * time.Minute},
			{Type: "ControlPlaneReady", Status: "False", Reason: "ScalingUp", Message: "Scaling up control plane to 3 replicas (actual 2)", Ago: 15 * time.Minute},
			{Type: "InfrastructureReady", Status: "True", Ago: 2 * time.Hour}},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 2 * time.Hour}},
		map[string]any{"phase": "Provisioned"},
		map[string]any{"controlPlane": counts(3, 3, 2, 2, 3), "workers": counts(1, 1, 1, 1, 1)})))
	b.add(Obj(infraV1b1, "DockerCluster", ns, cl, clusterLabels(cl), map[string]any{}, map[string]any{"conditions": conds(readyOld, true), "ready": true}))
	b.add(Obj(cpV1b1, "KubeadmControlPlane", ns, cl+"-cp", clusterLabels(cl), map[string]any{"replicas": i64(3), "version": "v1.30.4"},
		v1b1Status([]C{{Type: "Ready", Status: "False", Reason: "ScalingUp", Message: "Scaling up control plane to 3 replicas (actual 2)", Ago: 15 * time.Minute}},
			[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 2 * time.Hour}},
			map[string]any{"replicas": i64(3), "readyReplicas": i64(2), "updatedReplicas": i64(3)},
			map[string]any{"readyReplicas": i64(2), "availableReplicas": i64(2), "upToDateReplicas": i64(3)})))
	machine := func(name, ownerAPI, ownerKind, owner string, cp bool, old, new []C, infraOld []C) {
		labels := clusterLabels(cl)
		if cp {
			labels["cluster.x-k8s.io/control-plane"] = ""
		}
		m := Obj(coreV1b1, "Machine", ns, name, labels, map[string]any{
			"clusterName": cl, "version": "v1.30.4",
			"bootstrap":         map[string]any{"configRef": refV1b1(bootV1b1, "KubeadmConfig", ns, name)},
			"infrastructureRef": refV1b1(infraV1b1, "DockerMachine", ns, name),
		}, v1b1Status(old, new, nil, nil))
		owned(m, ownerAPI, ownerKind, owner)
		b.add(m)
		b.add(Obj(infraV1b1, "DockerMachine", ns, name, clusterLabels(cl), map[string]any{}, map[string]any{"conditions": conds(infraOld, true)}))
		b.add(Obj(bootV1b1, "KubeadmConfig", ns, name, clusterLabels(cl), map[string]any{}, map[string]any{"conditions": conds(readyOld, true), "ready": true}))
	}
	newReady := []C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}, {Type: "Ready", Status: "True", Reason: "Ready", Ago: time.Hour}, {Type: "UpToDate", Status: "True", Reason: "UpToDate", Ago: time.Hour}}
	machine("old-cp-a", cpV1b1, "KubeadmControlPlane", cl+"-cp", true, readyOld, newReady, readyOld)
	machine("old-cp-b", cpV1b1, "KubeadmControlPlane", cl+"-cp", true, readyOld, newReady, readyOld)
	machine("old-cp-c", cpV1b1, "KubeadmControlPlane", cl+"-cp", true, notReady,
		[]C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 15 * time.Minute}, {Type: "Ready", Status: "False", Reason: "NotReady", Message: "* NodeHealthy: Waiting for a Node", Ago: 15 * time.Minute}, {Type: "UpToDate", Status: "True", Reason: "UpToDate", Ago: 15 * time.Minute}},
		[]C{{Type: "Ready", Status: "False", Reason: "Bootstrapping", Message: "Running cloud-init", Ago: 15 * time.Minute}})
	b.add(Obj(coreV1b1, "MachineDeployment", ns, "old-md-0", clusterLabels(cl), map[string]any{
		"clusterName": cl, "replicas": i64(1),
		"template": map[string]any{"spec": map[string]any{"clusterName": cl, "version": "v1.30.4",
			"bootstrap":         map[string]any{"configRef": refV1b1(bootV1b1, "KubeadmConfigTemplate", ns, "old-md-0")},
			"infrastructureRef": refV1b1(infraV1b1, "DockerMachineTemplate", ns, "old-md-0")}},
	}, v1b1Status(readyOld, []C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}},
		map[string]any{"replicas": i64(1), "readyReplicas": i64(1), "availableReplicas": i64(1), "updatedReplicas": i64(1)},
		map[string]any{"readyReplicas": i64(1), "availableReplicas": i64(1), "upToDateReplicas": i64(1)})))
	ms := Obj(coreV1b1, "MachineSet", ns, "old-md-0-x", clusterLabels(cl), map[string]any{"clusterName": cl, "replicas": i64(1)},
		v1b1Status(readyOld, nil, map[string]any{"replicas": i64(1)}, nil))
	b.add(owned(ms, coreV1b1, "MachineDeployment", "old-md-0"))
	machine("old-md-0-x-1", coreV1b1, "MachineSet", "old-md-0-x", false, readyOld, newReady, readyOld)
	return s
}

// InNamespace returns a copy of the scenario in another namespace (references are namespace-local).
func (s *Scenario) InNamespace(ns string) *Scenario {
	c := &Scenario{Namespace: ns, Cluster: s.Cluster}
	for _, o := range s.Objects {
		o = o.DeepCopy()
		o.SetNamespace(ns)
		c.Objects = append(c.Objects, o)
	}
	return c
}

// Object returns the scenario's object of that kind and name (nil if none).
func (s *Scenario) Object(kind, name string) *unstructured.Unstructured {
	for _, o := range s.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}
