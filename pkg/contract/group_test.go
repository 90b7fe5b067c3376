package contract_test

import (
	"testing"

	clusterv1beta2 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/capctl/capctl/pkg/contract"
)

func TestGroupIsClusterAPIs(t *testing.T) {
	if contract.Group != clusterv1beta2.GroupVersion.Group {
		t.Fatalf("contract.Group %q, Cluster API's core group %q", contract.Group, clusterv1beta2.GroupVersion.Group)
	}
}

func TestIsClusterAPIGroup(t *testing.T) {
	for group, want := range map[string]bool{
		"cluster.x-k8s.io":                true,
		"infrastructure.cluster.x-k8s.io": true,
		"controlplane.cluster.x-k8s.io":   true,
		"clusterctl.cluster.x-k8s.io":     true,
		"examplecluster.x-k8s.io":         false,
		"x-k8s.io":                        false,
		"":                                false,
		"apps":                            false,
		"cluster.x-k8s.io.example.com":    false,
	} {
		if got := contract.IsClusterAPIGroup(group); got != want {
			t.Errorf("IsClusterAPIGroup(%q) = %v, want %v", group, got, want)
		}
	}
}
