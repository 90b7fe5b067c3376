//go:build unix

package fleetupgrade

import (
	"context"
	"testing"
	"time"
)

// TestGateCommandChildrenAreBounded: a gate command that leaves a background child passes on its
// own exit status instead of hanging the rollout, and Ctrl-C during a gate that ignores signals
// ends it at once (the run reports it interrupted, not failed).
func TestGateCommandChildrenAreBounded(t *testing.T) {
	w := FleetWave{Clusters: []ClusterUpgrade{{Namespace: "ns", Name: "a"}}}
	run := func(ctx context.Context, command string) (GateResult, *FleetStop, time.Duration) {
		var p progressLines
		a := &fleetApplier{req: FleetApplyRequest{Rollout: Rollout{GateCommand: command}, Progress: p.add}, change: rotation{after: time.Now()}}
		start := time.Now()
		res, stop := a.gateCommand(ctx, 0, 1, w, "sha256:00")
		return res, stop, time.Since(start)
	}

	res, stop, took := run(context.Background(), "sleep 300 & echo smoke ok")
	if stop != nil || !res.Passed || took > 30*time.Second || len(res.Output) != 1 || res.Output[0] != "smoke ok" {
		t.Errorf("background child: result %+v, stop %+v, took %s", res, stop, took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	res, stop, took = run(ctx, "trap '' INT TERM; sleep 300")
	if stop != nil || res.Passed || res.Reason != "interrupted" || took > 30*time.Second {
		t.Errorf("Ctrl-C: result %+v, stop %+v, took %s", res, stop, took)
	}
}
