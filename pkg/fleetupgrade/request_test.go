package fleetupgrade

import (
	"context"
	"strings"
	"testing"
	"time"
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
		{FleetApplyRequest{KubernetesVersion: "v1.35.1", Selection: FleetSelection{Namespace: "Prod_EU"}}.Validate(), `invalid namespace "Prod_EU"`},
		{FleetPlanRequest{KubernetesVersion: "v1.35.1", Selection: FleetSelection{Namespace: "a/b"}}.Validate(), `invalid namespace "a/b"`},
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

// TestFleetRequestsComplete: Complete validates and writes the version as vX.Y.Z; a saved plan
// keeps its empty version.
func TestFleetRequestsComplete(t *testing.T) {
	a := FleetApplyRequest{KubernetesVersion: "1.35.1"}
	if err := a.Complete(); err != nil || a.KubernetesVersion != "v1.35.1" {
		t.Errorf("apply: %+v %v", a, err)
	}
	p := FleetPlanRequest{KubernetesVersion: "1.35.1"}
	if err := p.Complete(); err != nil || p.KubernetesVersion != "v1.35.1" {
		t.Errorf("plan: %+v %v", p, err)
	}
	saved := FleetApplyRequest{Plan: "p.json"}
	if err := saved.Complete(); err != nil || saved.KubernetesVersion != "" {
		t.Errorf("--plan: %+v %v", saved, err)
	}
	bad := FleetApplyRequest{KubernetesVersion: "v1.35"}
	if err := bad.Complete(); err == nil || bad.KubernetesVersion != "v1.35" {
		t.Errorf("bad version: %+v %v", bad, err)
	}
	if got := (Rollout{}).parallel(10); got != DefaultMaxParallel {
		t.Errorf("default parallel %d", got)
	}
}

// TestSoakNeedsAHealthCheck: a rollout with a soak and no health check wired is refused before
// anything is read (the soak could not see new problems); a dry run does not soak.
func TestSoakNeedsAHealthCheck(t *testing.T) {
	req := FleetApplyRequest{KubernetesVersion: "v1.35.1", Rollout: Rollout{Soak: Duration(time.Minute)}}
	if _, err := resolveApply(context.Background(), req); err == nil || !strings.Contains(err.Error(), "a rollout with a soak needs a health check") {
		t.Errorf("no health check: %v", err)
	}
	req.DryRun = true
	if _, err := resolveApply(context.Background(), req); err != nil {
		t.Errorf("dry run: %v", err)
	}
}
