package kubesupport

import (
	"strings"
	"testing"
)

func TestSupportsWorkloadKubernetes(t *testing.T) {
	for _, tc := range []struct {
		provider, version, kube string
		want                    Status
		rng, reason             string
	}{
		// The ranges the release notes state.
		{CoreProvider, "v1.14.2", "v1.37.0", Supported, "v1.31.x -> v1.37.x", ""},
		{CoreProvider, "v1.14.2", "v1.31.0", Supported, "v1.31.x -> v1.37.x", ""},
		{CoreProvider, "v1.14.2", "v1.30.9", Unsupported, "v1.31.x -> v1.37.x", "cluster-api v1.14.2 supports workload clusters v1.31.x -> v1.37.x (Cluster API v1.14.1 release notes), not v1.30.9"},
		{CoreProvider, "v1.14.0", "v1.37.0", Unsupported, "v1.31.x -> v1.36.x", "v1.14.0 release notes"},
		{KubeadmControlPlane, "v1.14.0-rc.1", "v1.36.3", Supported, "v1.31.x -> v1.36.x", ""},
		{KubeadmControlPlane, "1.13.5", "v1.37.0", Unsupported, "v1.30.x -> v1.36.x", "control-plane-kubeadm v1.13.5 supports"},
		{KubeadmBootstrap, "v1.13.5", "1.36.1", Supported, "v1.30.x -> v1.36.x", ""},
		{KubeadmBootstrap, "v1.13.0", "v1.36.0", Unsupported, "v1.30.x -> v1.35.x", ""},
		{KubeadmBootstrap, "v1.13.6", "v1.37.0", Supported, "v1.30.x -> v1.37.x", ""},
		{CoreProvider, "v1.12.0", "v1.35.0", Unsupported, "v1.29.x -> v1.34.x", ""},
		{CoreProvider, "v1.12.3", "v1.35.0", Supported, "v1.29.x -> v1.35.x", ""},
		{CoreProvider, "v1.12.8", "v1.36.0", Supported, "v1.29.x -> v1.36.x", ""},
		{CoreProvider, "v1.12.10", "v1.29.0", Supported, "v1.29.x -> v1.36.x", ""},
		{CoreProvider, "v1.12.10", "v1.28.15", Unsupported, "v1.29.x -> v1.36.x", ""},
		{CoreProvider, "v1.14.2", "v2.0.0", Unsupported, "v1.31.x -> v1.37.x", ""},
		// A patch newer than those checked: older minors still refused, the next one unknown.
		{CoreProvider, "v1.14.9", "v1.37.2", Supported, "v1.31.x -> v1.37.x", ""},
		{CoreProvider, "v1.14.9", "v1.30.0", Unsupported, "v1.31.x -> v1.37.x", ""},
		{CoreProvider, "v1.14.9", "v1.38.0", NotDeclared, "v1.31.x -> v1.37.x", "newer than the releases capctl knows"},
		// What capctl knows nothing about is not checked.
		{CoreProvider, "v1.15.0", "v1.38.0", NotDeclared, "", "knows no workload Kubernetes range for cluster-api v1.15.0"},
		{CoreProvider, "v1.11.4", "v1.33.0", NotDeclared, "", "knows no workload Kubernetes range"},
		{"infrastructure-docker", "v1.14.2", "v1.37.0", NotDeclared, "", "infrastructure-docker does not declare"},
		{"control-plane-talos", "v0.6.0", "v1.30.0", NotDeclared, "", "does not declare"},
		{CoreProvider, "latest", "v1.37.0", NotDeclared, "", `version "latest" cannot be read`},
	} {
		got := SupportsWorkloadKubernetes(tc.provider, tc.version, tc.kube)
		if got.Status != tc.want || got.Range != tc.rng || !strings.Contains(got.Reason, tc.reason) {
			t.Errorf("%s %s / %s = %+v, want %s %q reason containing %q", tc.provider, tc.version, tc.kube, got, tc.want, tc.rng, tc.reason)
		}
		if got.Status != NotDeclared && got.Source == "" {
			t.Errorf("%s %s: a range without its source", tc.provider, tc.version)
		}
	}
}

// The table is contiguous per minor and every range is well formed: a gap would leave a release
// unchecked without anyone noticing.
func TestTableIsContiguous(t *testing.T) {
	next := map[uint64]uint64{}
	for _, s := range clusterAPI {
		if s.from != next[s.minor] {
			t.Errorf("v1.%d: span starts at patch %d, want %d", s.minor, s.from, next[s.minor])
		}
		if s.through < s.from || s.max < s.min || s.source == "" {
			t.Errorf("bad span %+v", s)
		}
		next[s.minor] = s.through + 1
	}
}
