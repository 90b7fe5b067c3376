package fleetupgrade

import (
	"fmt"
	"testing"
)

// BenchmarkBuildFleetPlan plans 5,000 clusters across 10 waves, half of them with a ClusterClass
// version list, from v1.28–v1.32 to v1.33.2.
func BenchmarkBuildFleetPlan(b *testing.B) {
	class := []string{"v1.28.0", "v1.29.3", "v1.30.4", "v1.31.5", "v1.32.1", "v1.33.2"}
	infos := make([]ClusterInfo, 5000)
	for i := range infos {
		infos[i] = ClusterInfo{
			Namespace: fmt.Sprintf("ns-%d", i%50), Name: fmt.Sprintf("c-%d", i),
			Labels:              map[string]string{WaveLabel: fmt.Sprint(i % 10)},
			ControlPlaneVersion: class[i%5], WorkerVersions: []string{class[i%5]},
		}
		if i%2 == 0 {
			infos[i].ClusterClass, infos[i].ClassVersions = "ns/quick-start", class
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		plan, err := BuildFleetPlan(infos, "v1.33.2")
		if err != nil || len(plan.Waves) != 10 {
			b.Fatalf("%v %d", err, len(plan.Waves))
		}
	}
}
