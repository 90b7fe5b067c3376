package fleetupgrade

import (
	"slices"
	"testing"
)

// TestSoakWatchesWhatEveryChangeFinished: the soak after a wave watches every cluster the change
// is done with, whichever change it is, and none that failed, stopped or did not start. (A
// rebase's moved clusters were once left out: its soak watched no cluster and passed.)
func TestSoakWatchesWhatEveryChangeFinished(t *testing.T) {
	results := []string{ResultUpgraded, ResultRotated, ResultRebased, ResultUpToDate,
		ResultFailed, ResultStopped, ResultNotStarted, ResultInterrupted, ResultWouldPatch}
	var w FleetWave
	wr := &FleetWaveReport{}
	for _, r := range results {
		w.Clusters = append(w.Clusters, ClusterUpgrade{Namespace: "ns", Name: r})
		wr.Clusters = append(wr.Clusters, FleetClusterReport{Namespace: "ns", Name: r, Result: r})
	}
	var got []string
	for _, cu := range soaked(w, wr) {
		got = append(got, cu.Name)
	}
	if want := []string{ResultUpgraded, ResultRotated, ResultRebased, ResultUpToDate}; !slices.Equal(got, want) {
		t.Errorf("the soak watches %v, want %v", got, want)
	}
}
