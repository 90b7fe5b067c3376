package cluster

import "testing"

func TestReadOnlyAllows(t *testing.T) {
	for _, c := range []struct {
		method, path, dryRun string
		want                 bool
	}{
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/clusters", "", true},
		{"HEAD", "/healthz", "", true},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "", true},
		{"POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "", true},
		{"PATCH", "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters/c", "All", true},
		{"PATCH", "/apis/cluster.x-k8s.io/v1beta2/namespaces/a/clusters/c", "", false},
		{"POST", "/api/v1/namespaces/a/configmaps", "", false},
		{"PUT", "/api/v1/namespaces/a/configmaps/x", "", false},
		{"DELETE", "/api/v1/namespaces/a/configmaps/x", "All", false},
		{"DELETE", "/api/v1/namespaces/a/configmaps/x", "", false},
		{"POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "", false},
		{"POST", "/api/v1/namespaces/a/selfsubjectaccessreviews", "", false},
	} {
		if got := ReadOnlyAllows(c.method, c.path, c.dryRun); got != c.want {
			t.Errorf("%s %s dryRun=%q: allowed %v, want %v", c.method, c.path, c.dryRun, got, c.want)
		}
	}
}
