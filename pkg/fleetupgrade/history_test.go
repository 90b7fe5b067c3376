package fleetupgrade

import (
	"strings"
	"testing"
	"time"
)

// TestHistoryNamesEachChange: the history lists an upgrade by its version, a rotation by its time
// and a rebase by its classes, each counting its own result; one record shows its change.
func TestHistoryNamesEachChange(t *testing.T) {
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	wave := func(result string) []RecordWave {
		return []RecordWave{{Wave: "-", Started: &at, Clusters: []RecordCluster{{Namespace: "p", Name: "a", Result: result}}}}
	}
	recs := []RolloutRecord{
		{Name: "r-3", Started: at, State: RolloutSucceeded, ClassRebase: "p/qs -> qs-2", Waves: wave(ResultRebased)},
		{Name: "r-2", Started: at, State: RolloutSucceeded, RolloutAfter: "2026-12-07T08:00:00Z", Waves: wave(ResultRotated)},
		{Name: "r-1", Started: at, State: RolloutSucceeded, KubernetesVersion: "v1.35.0", Waves: wave(ResultUpgraded)},
	}
	var b strings.Builder
	if err := RenderHistory(&b, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"rebase p/qs->qs-2", "1 rebased, 0 up to date, 0 failed of 1", "rotate@2026-12-07T08:00:00Z", "1 rotated,", "v1.35.0", "1 upgraded,"} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	if err := RenderRecord(&b, recs[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Rebase:     ClusterClass p/qs -> qs-2") || strings.Contains(b.String(), "Version:") {
		t.Errorf("record:\n%s", b.String())
	}
}
