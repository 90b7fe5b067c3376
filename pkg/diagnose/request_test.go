package diagnose

import (
	"strings"
	"testing"
)

// TestOptionsValidateNames: a library caller gets the command's answer for a name or namespace
// that cannot name an object.
func TestOptionsValidateNames(t *testing.T) {
	if err := (ClusterRequest{Name: "c1", Namespace: "team-a"}).Validate(); err != nil {
		t.Errorf("valid: %v", err)
	}
	if err := (ClusterRequest{Name: "C_1"}).Validate(); err == nil || !strings.Contains(err.Error(), `invalid cluster name "C_1"`) {
		t.Errorf("bad name: %v", err)
	}
	if err := (ClustersRequest{ClusterRequest: ClusterRequest{Namespace: "a/b"}, Concurrency: 1}).Validate(); err == nil || !strings.Contains(err.Error(), `invalid namespace "a/b"`) {
		t.Errorf("bad namespace: %v", err)
	}
}

func TestFleetOptionsValidate(t *testing.T) {
	if err := (ClustersRequest{Concurrency: DefaultConcurrency}).Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
	for _, n := range []int{0, -1} {
		if err := (ClustersRequest{Concurrency: n}).Validate(); err == nil || !strings.Contains(err.Error(), "--concurrency must be at least 1") {
			t.Errorf("%d: %v", n, err)
		}
	}
}
