package upgrade

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/testenv"
)

// progressLines collects a run's progress lines.
type progressLines struct {
	mu    sync.Mutex
	lines []string
}

func (p *progressLines) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (p *progressLines) has(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// TestApplyFleetCanaryAndMaxFailuresOnAPIServer: four clusters without wave labels, --canary 1
// (the first by namespace and name is the canary, alone in the first wave), --max-parallel 50%
// of the three left (rounded down: one at a time) and --max-failures 1: one cluster that cannot
// finish fails, is reported, and the others are still upgraded; a second failure stops the run
// with the clusters after it untouched.
func TestApplyFleetCanaryAndMaxFailuresOnAPIServer(t *testing.T) {
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "mf", "mf2")
	for _, n := range []string{"d", "b", "a", "c"} {
		createFleetCluster(t, c, "mf", n, "v1.34.2", "")
	}
	for _, n := range []string{"e", "f", "g", "h"} {
		createFleetCluster(t, c, "mf2", n, "v1.34.2", "")
	}
	si := &standIn{c: c, stuck: map[string]bool{}}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go si.run(sctx)
	waitFor(t, func() bool { return len(si.events()) >= 16 })
	si.setStuck("mf/b", true)
	si.setStuck("mf2/f", true)
	si.setStuck("mf2/g", true)

	var p progressLines
	req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "mf"}, Rollout: Rollout{Canary: 1, MaxParallelPercent: 50, MaxFailures: 1},
		Timeout: 2 * time.Second, PollInterval: 100 * time.Millisecond, Progress: p.add}
	rep, err := ApplyFleet(ctx, c, req)
	if !errors.Is(err, ErrFleetFailed) {
		t.Fatalf("err = %v, want ErrFleetFailed (%+v)", err, rep)
	}
	if len(rep.Waves) != 2 || rep.Waves[0].Wave != CanaryWave || len(rep.Waves[0].Clusters) != 1 || rep.Waves[0].Clusters[0].Name != "a" {
		t.Errorf("waves %+v: want the canary mf/a alone first", rep.Waves)
	}
	for _, want := range []string{"Canary: mf/a (the first 1 of the selection", "Wave -: 3 cluster(s), 1 at once", "mf/b: failure 1 of the 1 --max-failures allows, the rollout goes on"} {
		if !p.has(want) {
			t.Errorf("progress lacks %q: %q", want, p.lines)
		}
	}
	if got := resultsOf(rep); got["mf/a"] != ResultUpgraded || got["mf/b"] != ResultFailed || got["mf/c"] != ResultUpgraded || got["mf/d"] != ResultUpgraded {
		t.Errorf("results %v", got)
	}
	if rep.Failure != nil || len(rep.Failures) != 1 || rep.Failures[0].Name != "b" || !strings.Contains(rep.Failures[0].Reason, "timed out after 2s") {
		t.Errorf("failure %+v, failures %+v", rep.Failure, rep.Failures)
	}

	// The second failure is one too many: it stops the run there.
	req.Selection.Namespace = "mf2"
	req.Rollout = Rollout{MaxFailures: 1}
	rep, err = ApplyFleet(ctx, c, req)
	if !errors.Is(err, ErrFleetStopped) || rep.Failure == nil || rep.Failure.Name != "g" || len(rep.Failures) != 2 {
		t.Fatalf("err = %v, failure %+v, failures %+v", err, rep.Failure, rep.Failures)
	}
	if got := resultsOf(rep); got["mf2/e"] != ResultUpgraded || got["mf2/f"] != ResultFailed || got["mf2/g"] != ResultFailed || got["mf2/h"] != ResultNotStarted {
		t.Errorf("results %v", got)
	}
	if v := specVersion(t, c, kcpGVK, "mf2", "h-cp"); v != "v1.34.2" {
		t.Errorf("a cluster after the stop was touched: h at %s", v)
	}
}
