package fleetupgrade

import (
	"fmt"
	"strings"
	"testing"
)

// TestBuildFleetPlanAcrossManagementClusters: clusters read from several management clusters
// make one plan whose waves span them, each row naming its management cluster; clusters of the
// same namespace and name on two management clusters are two rows, and the order inside a wave
// is management cluster, namespace, name.
func TestBuildFleetPlanAcrossManagementClusters(t *testing.T) {
	info := func(mgmt, ns, name, wave, version string) ClusterInfo {
		l := map[string]string{}
		if wave != "" {
			l[PlainWaveLabel] = wave
		}
		return ClusterInfo{ManagementCluster: mgmt, Namespace: ns, Name: name, Labels: l, ControlPlaneVersion: version}
	}
	infos := []ClusterInfo{
		info("mgmt-3", "prod", "a", "2", "v1.34.2"),
		info("mgmt-1", "prod", "a", "1", "v1.34.2"),
		info("mgmt-2", "prod", "a", "2", "v1.34.2"),
		info("mgmt-2", "dev", "z", "1", "v1.34.2"),
		info("mgmt-3", "prod", "b", "1", "v1.34.0"),
		info("mgmt-1", "prod", "new", "1", "v1.36.0"),
		info("mgmt-2", "prod", "nolabel", "", "v1.35.0"),
	}
	plan, err := BuildFleetPlan(infos, "v1.35.0")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range plan.Waves {
		var rows []string
		for _, cu := range w.Clusters {
			rows = append(rows, cu.Ref())
		}
		got = append(got, w.Name()+": "+strings.Join(rows, ", "))
	}
	want := []string{
		"1: prod/a on mgmt-1, dev/z on mgmt-2, prod/b on mgmt-3",
		"2: prod/a on mgmt-2, prod/a on mgmt-3",
		"-: prod/nolabel on mgmt-2",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("waves\n got %q\nwant %q", got, want)
	}
	if len(plan.Unplannable) != 1 || plan.Unplannable[0].ManagementCluster != "mgmt-1" || plan.Unplannable[0].Ref() != "prod/new on mgmt-1" {
		t.Errorf("unplannable %+v", plan.Unplannable)
	}
	// Without management clusters the names are as on one management cluster.
	one, err := BuildFleetPlan([]ClusterInfo{info("", "prod", "a", "1", "v1.34.2")}, "v1.35.0")
	if err != nil || one.Waves[0].Clusters[0].Ref() != "prod/a" || one.Waves[0].Clusters[0].ManagementCluster != "" {
		t.Errorf("one management cluster: %+v %v", one, err)
	}
}

// TestVersionsToSetPerManagementCluster: each management cluster's providers are checked against
// the versions its own clusters get, not those of the others.
func TestVersionsToSetPerManagementCluster(t *testing.T) {
	waves := []FleetWave{{Clusters: []ClusterUpgrade{
		{ManagementCluster: "eu-1", Namespace: "ns", Name: "a", Steps: steps("cp v1.35.0", "w v1.35.0")},
		{ManagementCluster: "eu-2", Namespace: "ns", Name: "a", Steps: steps("cp v1.34.3", "cp v1.35.0")},
	}}}
	if got := fmt.Sprint(versionsToSet(waves, "eu-1")); got != "map[v1.35.0:[ns/a]]" {
		t.Errorf("eu-1: %s", got)
	}
	if got := fmt.Sprint(versionsToSet(waves, "eu-2")); got != "map[v1.34.3:[ns/a] v1.35.0:[ns/a]]" {
		t.Errorf("eu-2: %s", got)
	}
	if got := versionsToSet(waves, ""); len(got) != 0 {
		t.Errorf("no management cluster named: %v", got)
	}
}

func TestMemberClientsRefusesRepeats(t *testing.T) {
	if _, err := memberClients(nil); err == nil {
		t.Error("no member accepted")
	}
	if _, err := memberClients([]FleetMember{{Name: "a"}}); err == nil || !strings.Contains(err.Error(), `"a" has no client`) {
		t.Errorf("nil client: %v", err)
	}
}
