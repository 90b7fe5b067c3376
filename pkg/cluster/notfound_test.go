package cluster

import (
	"strings"
	"testing"
)

func TestClusterNotFoundErrorSaysWhatExists(t *testing.T) {
	for _, tc := range []struct {
		err  ClusterNotFoundError
		want []string
	}{
		{ClusterNotFoundError{Namespace: "healthy", Name: "nope", Existing: []string{"prod"}},
			[]string{`cluster "nope" not found in namespace "healthy"; clusters there: prod`, "pass -n NAMESPACE"}},
		{ClusterNotFoundError{Namespace: "default", Name: "alpha", ElsewhereIn: []string{"fleet", "lab"}},
			[]string{"there are no clusters in that namespace", `exists in namespace "fleet", "lab": pass -n fleet`}},
	} {
		got := tc.err.Error()
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
	}
}
