// Package classfixture creates, for tests, the in-memory ClusterClass of a Cluster API release
// (the fixtures' clusterclass-in-memory.yaml: the class and its templates) and the provider
// inventory of that release.
package classfixture

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/repository"
)

// Create creates the in-memory ClusterClass of version and its templates in namespace ns;
// mutate, when set, changes each object first (rename, patch).
func Create(tb testing.TB, c client.Client, version, ns string, mutate func(*unstructured.Unstructured) error) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.FixturesDir(tb), "repository", "infrastructure-docker", version, "clusterclass-in-memory.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := repository.ParseObjects("clusterclass-in-memory.yaml", data)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range objs {
		o := &objs[i]
		o.SetNamespace(ns)
		if mutate != nil {
			if err := mutate(o); err != nil {
				tb.Fatal(err)
			}
		}
		if err := c.Create(context.Background(), o); err != nil {
			tb.Fatalf("creating %s %s/%s: %v", o.GetKind(), ns, o.GetName(), err)
		}
	}
}

// WriteInventory records the four providers of the fixtures (core, kubeadm bootstrap and control
// plane, docker) at version, in namespace ns, as init would.
func WriteInventory(tb testing.TB, c client.Client, version, ns string) {
	tb.Helper()
	for _, p := range []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, version, ns),
		inventory.New("kubeadm", provider.BootstrapProviderType, version, ns),
		inventory.New("kubeadm", provider.ControlPlaneProviderType, version, ns),
		inventory.New("docker", provider.InfrastructureProviderType, version, ns),
	} {
		if err := inventory.Write(context.Background(), c, p); err != nil {
			tb.Fatal(err)
		}
	}
}

// Cluster is a Cluster of the in-memory ClusterClass: one control plane machine and, with
// workers > 0, one MachineDeployment topology md-0 of that many replicas.
func Cluster(ns, name, version string, workers int64) *unstructured.Unstructured {
	topology := map[string]any{
		"classRef": map[string]any{"name": "in-memory"}, "version": version,
		"controlPlane": map[string]any{"replicas": int64(1)},
	}
	if workers > 0 {
		topology["workers"] = map[string]any{"machineDeployments": []any{
			map[string]any{"class": "default-worker", "name": "md-0", "replicas": workers},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"topology": topology},
	}}
}
