package cluster

import (
	"strings"
	"testing"
)

func TestCheckNamesOfRequests(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{CheckNamespace(""), ""},
		{CheckNamespace("team-a"), ""},
		{CheckNamespace("Team_A"), `invalid namespace "Team_A"`},
		{CheckNamespace("../x"), `invalid namespace "../x"`},
		{CheckClusterRef("c1.prod", "team-a"), ""},
		{CheckClusterRef("C1", "team-a"), `invalid cluster name "C1"`},
		{CheckClusterRef("c1", "a/b"), `invalid namespace "a/b"`},
	} {
		if (tc.want == "") != (tc.err == nil) || (tc.err != nil && !strings.Contains(tc.err.Error(), tc.want)) {
			t.Errorf("%v, want %q", tc.err, tc.want)
		}
	}
}
