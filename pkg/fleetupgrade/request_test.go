package fleetupgrade

import (
	"strings"
	"testing"
)

func TestFleetRequestsValidate(t *testing.T) {
	wave := 1
	for _, tc := range []struct {
		err  error
		want string // "" when valid
	}{
		{FleetApplyRequest{KubernetesVersion: "v1.35.1"}.Validate(), ""},
		{FleetApplyRequest{KubernetesVersion: "1.35.1", Selection: FleetSelection{Selector: "env=prod"}}.Validate(), ""},
		{FleetApplyRequest{Plan: "p.json", Timeout: -1}.Validate(), ""},
		{FleetApplyRequest{KubernetesVersion: "v1.35"}.Validate(), "v1.35"},
		{FleetApplyRequest{KubernetesVersion: "v1.35.1", Selection: FleetSelection{Selector: "a b"}}.Validate(), `--selector "a b"`},
		{FleetApplyRequest{KubernetesVersion: "v1.35.1", Rollout: Rollout{Canary: -1}}.Validate(), "--canary"},
		{FleetApplyRequest{KubernetesVersion: "v1.35.1", Rollout: Rollout{Window: "someday"}}.Validate(), "someday"},
		{FleetApplyRequest{Plan: "p.json", KubernetesVersion: "v1.35.1"}.Validate(), "the plan file p.json gives the version"},
		{FleetPlanRequest{KubernetesVersion: "v1.35.1", Save: "p.json"}.Validate(), ""},
		{FleetPlanRequest{KubernetesVersion: "v1.35.1", Save: "p.json", Selection: FleetSelection{Wave: &wave}}.Validate(), "--save cannot be combined with --wave"},
		{FleetPlanRequest{KubernetesVersion: "v1.35.1", Rollout: Rollout{MaxFailures: -1}}.Validate(), "--max-failures"},
	} {
		if (tc.want == "") != (tc.err == nil) || (tc.err != nil && !strings.Contains(tc.err.Error(), tc.want)) {
			t.Errorf("%v, want %q", tc.err, tc.want)
		}
	}
}
