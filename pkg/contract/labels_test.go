package contract

import "testing"

func TestDeclared(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"cluster.x-k8s.io/v1beta2": "v1beta2", "cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/provider": "cluster-api"}, "v1beta2"},
		{map[string]string{"cluster.x-k8s.io/v1beta1": "v1alpha4_v1beta1"}, "v1beta1"},
		{map[string]string{"cluster.x-k8s.io/provider": "infrastructure-docker", "cluster.x-k8s.io/cluster-name": "x"}, ""},
		{map[string]string{"cluster.x-k8s.io/v1": "v1", "cluster.x-k8s.io/v1beta2": "v1beta2"}, "v1"},
		{map[string]string{"cluster.x-k8s.io/vbeta": "x", "cluster.x-k8s.io/v1gamma1": "x"}, ""},
		{nil, ""},
	} {
		if got := Declared(tc.labels); got != tc.want {
			t.Errorf("Declared(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{{"v1beta1", "v1beta2", -1}, {"v1beta2", "v1beta1", 1}, {"v1beta2", "v1beta2", 0}, {"v1alpha4", "v1beta1", -1}, {"v1", "v1beta2", 1}} {
		if got := Compare(tc.a, tc.b); (got < 0) != (tc.want < 0) || (got > 0) != (tc.want > 0) {
			t.Errorf("Compare(%s, %s) = %d, want the sign of %d", tc.a, tc.b, got, tc.want)
		}
	}
}
