package fleetupgrade

import (
	"strings"
	"testing"
)

func TestRolloutParallel(t *testing.T) {
	for _, tc := range []struct {
		flag string
		n    int
		want int
	}{
		{"1", 10, 1}, {"3", 10, 3}, {"3", 2, 3}, // more than the wave: the wave's clusters all at once
		{"25%", 10, 2}, {"25%", 8, 2}, {"25%", 7, 1}, {"25%", 3, 1}, {"25%", 1, 1}, // rounded down, at least 1
		{"50%", 5, 2}, {"100%", 7, 7}, {"1%", 250, 2}, {"33%", 100, 33}, {"34%", 3, 1},
	} {
		var r Rollout
		if err := r.SetMaxParallel(tc.flag); err != nil {
			t.Fatalf("%s: %v", tc.flag, err)
		}
		if got := r.parallel(tc.n); got != tc.want {
			t.Errorf("--max-parallel %s over %d clusters: %d at once, want %d", tc.flag, tc.n, got, tc.want)
		}
	}
	if got := (Rollout{}).parallel(5); got != 1 {
		t.Errorf("default: %d at once, want 1", got)
	}
	for _, bad := range []string{"0", "-1", "0%", "101%", "x", "2.5", "%", "25 %x", ""} {
		var r Rollout
		if err := r.SetMaxParallel(bad); err == nil {
			t.Errorf("--max-parallel %q accepted: %+v", bad, r)
		}
	}
	for _, r := range []Rollout{{MaxParallel: -1}, {MaxParallelPercent: 120}, {MaxParallel: 2, MaxParallelPercent: 10}, {Canary: -1}, {MaxFailures: -2}} {
		if err := r.Validate(); err == nil {
			t.Errorf("%+v passed the check", r)
		}
	}
}

func planOf(t *testing.T, labels map[string]map[string]string, names ...string) *FleetPlan {
	t.Helper()
	var infos []ClusterInfo
	for _, n := range names {
		ns, name, _ := strings.Cut(n, "/")
		infos = append(infos, ClusterInfo{Namespace: ns, Name: name, ControlPlaneVersion: "v1.34.0", Labels: labels[n]})
	}
	plan, err := BuildFleetPlan(infos, "v1.35.0")
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func waveRefs(plan *FleetPlan) string {
	var parts []string
	for _, w := range plan.Waves {
		var refs []string
		for _, cu := range w.Clusters {
			refs = append(refs, cu.Ref())
		}
		parts = append(parts, w.Name()+":"+strings.Join(refs, ","))
	}
	return strings.Join(parts, " ")
}

func TestRolloutCanary(t *testing.T) {
	// The canaries are the first clusters of the plan's order (namespace, then name), whatever
	// order they were read in.
	plan := planOf(t, nil, "prod/z", "dev/b", "prod/a", "dev/a")
	if err := (Rollout{Canary: 1}).shape(plan); err != nil {
		t.Fatal(err)
	}
	if got := waveRefs(plan); got != "canary:dev/a -:dev/b,prod/a,prod/z" {
		t.Errorf("waves %s", got)
	}
	plan = planOf(t, nil, "prod/z", "dev/b", "prod/a", "dev/a")
	if err := (Rollout{Canary: 3}).shape(plan); err != nil || waveRefs(plan) != "canary:dev/a,dev/b,prod/a -:prod/z" {
		t.Errorf("canary 3: %s %v", waveRefs(plan), err)
	}
	// More canaries than clusters: one wave, the canary.
	plan = planOf(t, nil, "a/x", "a/y")
	if err := (Rollout{Canary: 5}).shape(plan); err != nil || waveRefs(plan) != "canary:a/x,a/y" {
		t.Errorf("canary 5 of 2: %s %v", waveRefs(plan), err)
	}
	// Up-to-date clusters keep their place: a re-run picks the same canary.
	infos := []ClusterInfo{{Namespace: "a", Name: "x", ControlPlaneVersion: "v1.35.0"}, {Namespace: "a", Name: "y", ControlPlaneVersion: "v1.34.0"}}
	p2, _ := BuildFleetPlan(infos, "v1.35.0")
	if err := (Rollout{Canary: 1}).shape(p2); err != nil || waveRefs(p2) != "canary:a/x -:a/y" {
		t.Errorf("re-run canary: %s %v", waveRefs(p2), err)
	}
	// Wave labels order the rollout themselves: --canary is refused, naming the clusters.
	plan = planOf(t, map[string]map[string]string{"a/y": {PlainWaveLabel: "1"}}, "a/x", "a/y")
	err := (Rollout{Canary: 1}).shape(plan)
	if err == nil || !strings.Contains(err.Error(), "clusters carry a wave label") || !strings.Contains(err.Error(), "a/y") {
		t.Errorf("labelled: %v", err)
	}
	// No canary: the plan is as built.
	plan = planOf(t, nil, "a/x", "a/y")
	if err := (Rollout{}).shape(plan); err != nil || waveRefs(plan) != "-:a/x,a/y" {
		t.Errorf("no canary: %s %v", waveRefs(plan), err)
	}
}
