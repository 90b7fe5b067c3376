package fleetupgrade

import (
	"reflect"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/versions"
)

func steps(s ...string) []UpgradeStep {
	out := []UpgradeStep{}
	for _, x := range s {
		comp, v, _ := strings.Cut(x, " ")
		c := ControlPlane
		if comp == "w" {
			c = Workers
		}
		out = append(out, UpgradeStep{Component: c, Version: v, AnyPatch: strings.HasSuffix(v, ".x")})
	}
	return out
}

func TestPlanClusterPaths(t *testing.T) {
	target, _ := versions.Parse("v1.33.2")
	cases := []struct {
		name   string
		info   ClusterInfo
		want   []UpgradeStep
		reason string
	}{
		{"patch only", ClusterInfo{ControlPlaneVersion: "v1.33.0"}, steps("cp v1.33.2", "w v1.33.2"), ""},
		{"up to date", ClusterInfo{ControlPlaneVersion: "v1.33.2"}, steps(), ""},
		{"minor by minor without a class list", ClusterInfo{ControlPlaneVersion: "v1.31.0"}, steps("cp v1.32.x", "cp v1.33.2", "w v1.33.2"), ""},
		{"workers catch up before the skew breaks", ClusterInfo{ControlPlaneVersion: "v1.28.1", WorkerVersions: []string{"v1.28.1", "v1.27.9"}},
			steps("cp v1.29.x", "cp v1.30.x", "w v1.30.x", "cp v1.31.x", "cp v1.32.x", "cp v1.33.2", "w v1.33.2"), ""},
		{"workers only behind", ClusterInfo{ControlPlaneVersion: "v1.33.2", WorkerVersions: []string{"v1.32.0"}}, steps("w v1.33.2"), ""},
		{"class list picks the newest patch of each minor", ClusterInfo{ControlPlaneVersion: "v1.31.0", ClusterClass: "ns/cc", ClassVersions: []string{"v1.31.0", "v1.32.1", "v1.32.7", "v1.33.2"}},
			steps("cp v1.32.7", "cp v1.33.2", "w v1.33.2"), ""},
		{"class list misses a minor", ClusterInfo{ControlPlaneVersion: "v1.31.0", ClusterClass: "ns/cc", ClassVersions: []string{"v1.31.0", "v1.33.2"}}, nil, "lists no v1.32 version"},
		{"class list misses the target", ClusterInfo{ControlPlaneVersion: "v1.32.0", ClusterClass: "ns/cc", ClassVersions: []string{"v1.32.0", "v1.33.1"}}, nil, "does not list v1.33.2"},
		{"class list misses the current", ClusterInfo{ControlPlaneVersion: "v1.32.0", ClusterClass: "ns/cc", ClassVersions: []string{"v1.32.1", "v1.33.2"}}, nil, "does not list the current version v1.32.0"},
		{"class not found", ClusterInfo{ControlPlaneVersion: "v1.32.0", ClusterClass: "ns/cc", ClassMissing: true}, nil, "ClusterClass ns/cc not found"},
		{"downgrade", ClusterInfo{ControlPlaneVersion: "v1.34.0"}, nil, "cannot be downgraded"},
		{"unparseable", ClusterInfo{ControlPlaneVersion: "1.32"}, nil, `version "1.32" is not a Kubernetes version`},
		{"unparseable worker", ClusterInfo{ControlPlaneVersion: "v1.32.0", WorkerVersions: []string{"latest"}}, nil, `workers' version "latest"`},
		{"major change", ClusterInfo{ControlPlaneVersion: "v0.33.0"}, nil, "changes the major version"},
		{"skew already broken", ClusterInfo{ControlPlaneVersion: "v1.32.0", WorkerVersions: []string{"v1.28.0"}}, nil, "more than 3 minors behind"},
		{"no version", ClusterInfo{VersionProblem: "no spec.topology"}, nil, "no spec.topology"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := planCluster(tc.info, target)
			if tc.reason != "" {
				if !strings.Contains(reason, tc.reason) {
					t.Fatalf("reason %q, want it to contain %q (steps %v)", reason, tc.reason, got.Steps)
				}
				return
			}
			if reason != "" {
				t.Fatalf("unplannable: %s", reason)
			}
			if !reflect.DeepEqual(got.Steps, tc.want) {
				t.Errorf("steps\n got %v\nwant %v", got.Steps, tc.want)
			}
			if got.UpToDate != (len(tc.want) == 0) {
				t.Errorf("UpToDate = %v", got.UpToDate)
			}
		})
	}
}

func TestBuildFleetPlanWaves(t *testing.T) {
	infos := []ClusterInfo{
		{Namespace: "b", Name: "x", ControlPlaneVersion: "v1.33.0"},
		{Namespace: "a", Name: "y", ControlPlaneVersion: "v1.33.0", Labels: map[string]string{WaveLabel: "10"}},
		{Namespace: "a", Name: "z", ControlPlaneVersion: "v1.33.0", Labels: map[string]string{PlainWaveLabel: "2"}},
		{Namespace: "a", Name: "w", ControlPlaneVersion: "v1.33.0", Labels: map[string]string{PlainWaveLabel: "2", WaveLabel: "-1"}},
		{Namespace: "a", Name: "v", ControlPlaneVersion: "v1.33.0", Labels: map[string]string{WaveLabel: "two"}},
		{Namespace: "a", Name: "u", ControlPlaneVersion: "v1.33.0", Labels: map[string]string{PlainWaveLabel: "2"}},
	}
	plan, err := BuildFleetPlan(infos, "v1.33.2")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range plan.Waves {
		for _, c := range w.Clusters {
			got = append(got, w.Name()+":"+c.Namespace+"/"+c.Name)
		}
	}
	want := []string{"-1:a/w", "2:a/u", "2:a/z", "10:a/y", "-:b/x"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if len(plan.Unplannable) != 1 || plan.Unplannable[0].Name != "v" || !strings.Contains(plan.Unplannable[0].Reason, "not an integer") {
		t.Errorf("unplannable %+v", plan.Unplannable)
	}
	// Both spellings are accepted (as generate cluster accepts them); the plan says v1.33.2.
	if p, err := BuildFleetPlan(nil, "1.33.2"); err != nil || p.KubernetesVersion != "v1.33.2" {
		t.Errorf("target without v: %v, %+v", err, p)
	}
	if _, err := BuildFleetPlan(nil, "v1.33"); err == nil {
		t.Error("target without patch accepted")
	}
}

// TestPlanFleetWithoutClusterAPI: on an API server without Cluster API the fleet plan says to
// run capctl init.
func TestPlanFleetWithoutClusterAPI(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	testenv.Integration(t)
	env := testenv.Start(t, testenv.Options{})
	if _, err := PlanFleet(testenv.Context(t), env.Client, env.Client.Mapper, FleetPlanRequest{KubernetesVersion: "v1.33.2"}); err == nil || !strings.Contains(err.Error(), "capctl init") {
		t.Errorf("fleet plan without Cluster API: %v", err)
	}
}

func TestPlanFleetOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)

	plan, err := PlanFleet(ctx, env.Client, env.Client.Mapper, FleetPlanRequest{KubernetesVersion: "v1.33.2"})
	if err != nil || len(plan.Waves) != 0 || len(plan.Unplannable) != 0 {
		t.Fatalf("empty fleet: %+v, %v", plan, err)
	}
	testenv.CreateFromFile(t, env.Client, "testdata/fleet.yaml")
	plan, err = PlanFleet(ctx, env.Client, env.Client.Mapper, FleetPlanRequest{KubernetesVersion: "v1.33.2"})
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		wave, name string
		steps      []UpgradeStep
	}
	var got []row
	for _, w := range plan.Waves {
		for _, c := range w.Clusters {
			got = append(got, row{w.Name(), c.Name, c.Steps})
		}
	}
	want := []row{
		{"1", "bravo", steps("cp v1.31.5", "cp v1.32.1", "cp v1.33.2", "w v1.33.2")},
		{"1", "charlie", steps("cp v1.30.x", "cp v1.31.x", "cp v1.32.x", "w v1.32.x", "cp v1.33.2", "w v1.33.2")},
		{"2", "alpha", steps("cp v1.32.1", "cp v1.33.2", "w v1.33.2")},
		{"2", "juliet", steps("cp v1.33.2", "w v1.33.2")},
		{"-", "delta", steps()},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan\n got %+v\nwant %+v", got, want)
	}
	reasons := map[string]string{}
	for _, u := range plan.Unplannable {
		reasons[u.Name] = u.Reason
	}
	for name, want := range map[string]string{
		"echo":    "ClusterClass classes/narrow lists no v1.32 version",
		"foxtrot": "does not list the current version v1.29.0",
		"golf":    `upgrade-wave="soon" is not an integer`,
		"hotel":   "cannot be downgraded",
		"india":   `"1.32" is not a Kubernetes version`,
	} {
		if !strings.Contains(reasons[name], want) {
			t.Errorf("%s: reason %q, want %q", name, reasons[name], want)
		}
	}
	if len(plan.Unplannable) != 5 {
		t.Errorf("unplannable: %+v", plan.Unplannable)
	}
}
