package describetest

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FleetObjectsPerCluster is how many objects each fleet cluster has: the Cluster, its
// DockerCluster and KubeadmControlPlane, 3 control plane and 3 worker Machines each with a
// DockerMachine, a KubeadmConfig and a bootstrap data Secret, a MachineDeployment and its
// MachineSet, a MachineHealthCheck, a ClusterResourceSetBinding and the 5 Secrets a kubeadm
// cluster keeps (CA, etcd, front proxy, service account, kubeconfig), as a small real cluster has.
const FleetObjectsPerCluster = 3 + 6*4 + 2 + 1 + 1 + 5

// Fleet is a fleet of clusters spread over namespaces (perNamespace clusters in each, namespaces
// fleet-000, fleet-001, …), FleetObjectsPerCluster objects each. The clusters vary as a real fleet
// does: one in four is built from a ClusterClass (its version is in the Cluster), one in ten is
// still provisioning, one in twenty is paused, one in fifty is being deleted, and a third run an
// older Kubernetes version. It is the benchmark's fleet for `describe clusters -A`.
func Fleet(clusters, perNamespace int) []*Scenario {
	out := make([]*Scenario, 0, clusters)
	for i := 0; i < clusters; i++ {
		out = append(out, fleetCluster(i, fmt.Sprintf("fleet-%03d", i/perNamespace), fmt.Sprintf("c-%04d", i)))
	}
	return out
}

// FleetNamespaces are the namespaces of Fleet(clusters, perNamespace).
func FleetNamespaces(clusters, perNamespace int) []string {
	var out []string
	for i := 0; i < clusters; i += perNamespace {
		out = append(out, fmt.Sprintf("fleet-%03d", i/perNamespace))
	}
	return out
}

func fleetCluster(i int, ns, name string) *Scenario {
	s := &Scenario{Namespace: ns, Cluster: name}
	b := &builder{s}
	version := "v1.34.1"
	if i%3 == 1 {
		version = "v1.33.5"
	}
	var topology map[string]any
	if i%4 == 0 {
		topology = map[string]any{"classRef": map[string]any{"name": "quick-start"}, "version": version}
	}
	provisioning := i%10 == 7
	clusterConds := []C{{Type: "Available", Status: "True", Reason: "Available", Ago: 3 * time.Hour},
		{Type: "Ready", Status: "True", Reason: "Ready", Ago: 3 * time.Hour}}
	cpCounts, workerCounts := counts(3, 3, 3, 3, 3), counts(3, 3, 3, 3, 3)
	if provisioning {
		clusterConds = []C{{Type: "Available", Status: "False", Reason: "NotAvailable", Ago: 10 * time.Minute,
			Message: "* ControlPlaneAvailable: Control plane not yet initialized\n* WorkersAvailable: 0 of 3 machines available"}}
		cpCounts = map[string]any{"desiredReplicas": i64(3), "replicas": i64(1), "readyReplicas": i64(0)}
		workerCounts = map[string]any{"desiredReplicas": i64(3), "replicas": i64(0)}
	}
	b.cluster(topology, clusterConds, cpCounts, workerCounts, ready,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 3 * time.Hour}}, 3, version)
	cl := s.Objects[0]
	switch {
	case i%20 == 13:
		cl.Object["spec"].(map[string]any)["paused"] = true
	case i%20 == 5:
		cl.SetAnnotations(map[string]string{"cluster.x-k8s.io/paused": ""})
	}
	if i%50 == 49 {
		cl.SetAnnotations(map[string]string{deletingAnnotation: "true"})
	}
	machines := []string{}
	for m := 0; m < 3; m++ {
		n := fmt.Sprintf("%s-control-plane-%c", name, 'a'+m)
		b.machine(n, version, "KubeadmControlPlane", name+"-control-plane", true, healthyMachine(), ready, ready)
		machines = append(machines, n)
	}
	md := name + "-md-0"
	b.machineDeployment(md, 3, version, map[string]any{"replicas": i64(3), "readyReplicas": i64(3), "availableReplicas": i64(3), "upToDateReplicas": i64(3)},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 2 * time.Hour}})
	b.machineSet(md+"-5f8c", md, 3, version, map[string]any{"replicas": i64(3), "readyReplicas": i64(3), "availableReplicas": i64(3), "upToDateReplicas": i64(3)})
	for m := 0; m < 3; m++ {
		n := fmt.Sprintf("%s-5f8c-%c", md, 'x'+m)
		b.machine(n, version, "MachineSet", md+"-5f8c", false, healthyMachine(), ready, ready, "cluster.x-k8s.io/deployment-name", md)
		machines = append(machines, n)
	}
	b.healthCheck(name+"-workers", map[string]any{"cluster.x-k8s.io/deployment-name": md}, map[string]any{
		"expectedMachines": i64(3), "currentHealthy": i64(3),
		"conditions": conds([]C{{Type: "RemediationAllowed", Status: "True", Reason: "RemediationAllowed", Ago: time.Hour}}, false),
	})
	b.add(Obj(addon, "ClusterResourceSetBinding", ns, name, clusterLabels(name), map[string]any{
		"clusterName": name,
		"bindings":    []any{map[string]any{"clusterResourceSetName": "cni"}},
	}, nil))
	for _, suffix := range []string{"ca", "etcd", "proxy", "sa", "kubeconfig"} {
		b.add(fleetSecret(ns, name+"-"+suffix, name, "cluster.x-k8s.io/secret"))
	}
	for _, m := range machines {
		b.add(fleetSecret(ns, m, name, "cluster.x-k8s.io/secret"))
	}
	// Infrastructure and bootstrap machines without conditions: fewer status writes to seed, and
	// `describe clusters` reads none of them.
	for _, o := range s.Objects {
		if o.GetKind() == "DockerMachine" || o.GetKind() == "KubeadmConfig" {
			delete(o.Object, "status")
		}
	}
	return s
}

// fleetSecret is a Secret of the size of a kubeadm cluster's (a certificate and a key), with fake
// data: nothing in it is a real credential.
func fleetSecret(ns, name, cluster, typ string) *unstructured.Unstructured {
	u := Obj("v1", "Secret", ns, name, clusterLabels(cluster), nil, nil)
	u.Object["type"] = typ
	u.Object["data"] = map[string]any{
		"tls.crt": fakePEM, "tls.key": fakePEM,
	}
	return u
}

// fakePEM is base64 of 1 KiB of filler: a Secret's size without anything secret.
var fakePEM = func() string {
	b := make([]byte, 1368) // base64 of 1 KiB
	for i := range b {
		b[i] = 'A'
	}
	return string(b)
}()
