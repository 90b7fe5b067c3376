package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/diagnose"
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
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
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
	si := startStandIn(t, c, 16)
	si.setStuck("mf/b", true)
	si.setStuck("mf2/f", true)
	si.setStuck("mf2/g", true)

	var p progressLines
	req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "mf"}, Rollout: Rollout{Canary: 1, MaxParallelPercent: 50, MaxFailures: 1},
		// Each stuck cluster fails after Timeout; the others must finish inside it, and a clean-clone
		// CI run at load 32 took the stand-in longer than 2 s for one of them.
		Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond, Progress: p.add}
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
	if rep.Failure != nil || len(rep.Failures) != 1 || rep.Failures[0].Name != "b" || !strings.Contains(rep.Failures[0].Reason, "timed out after 10s") {
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

// machinesOf lists a cluster's Machines.
func machinesOf(t *testing.T, c client.Client, ns, cluster string) []unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(capiV1beta2.WithKind("MachineList"))
	if err := c.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{ClusterNameLabel: cluster}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestApplyFleetGatesOnAPIServer: a --gate-command that fails after the canary wave stops the
// rollout there, with its output and only the canary upgraded; once it passes, the same command
// finishes, every gate seeing its wave, the clusters and the plan digest in its environment.
// During a soak, a cluster that stops being Available, a Machine a MachineHealthCheck remediates,
// and a new diagnose finding (the Cluster paused) each stop the rollout naming the cluster and
// the evidence. Outside its --window, --no-wait stops before the first patch saying when the
// window opens, and without it the run waits (until Ctrl-C here), changing nothing.
func TestApplyFleetGatesOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "g", "s1", "s2", "s3", "s4", "s5", "w")
	for _, n := range []string{"a", "b", "c"} {
		createFleetCluster(t, c, "g", n, "v1.34.2", "")
	}
	for _, ns := range []string{"s1", "s2", "s3", "s4", "s5", "w"} {
		createFleetCluster(t, c, ns, "x", "v1.34.2", "")
	}
	startStandIn(t, c, 18)

	t.Run("a failing gate stops after the canary, the fixed gate lets the re-run finish", func(t *testing.T) {
		dir := t.TempDir()
		log, ok := filepath.Join(dir, "gate.log"), filepath.Join(dir, "ok")
		gate := fmt.Sprintf(`echo "$CAPCTL_WAVE $CAPCTL_WAVE_INDEX/$CAPCTL_WAVES $CAPCTL_CLUSTERS $CAPCTL_KUBERNETES_VERSION" >> %s; test -f %s || { echo "smoke test failed on $CAPCTL_CLUSTERS"; exit 3; }`, log, ok)
		var p progressLines
		req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "g"},
			Rollout: Rollout{Canary: 1, MaxParallel: 2, Soak: Duration(time.Second), GateCommand: gate}, Health: diagnose.SoakHealth,
			Timeout: 20 * time.Second, PollInterval: 200 * time.Millisecond, Progress: p.add}
		rep, err := ApplyFleet(ctx, c, req)
		if !errors.Is(err, ErrFleetStopped) || rep.Stop == nil {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		s := rep.Stop
		if s.At != "after wave canary" || s.Gate != GateCommand || s.Reason != "the gate command exited with status 3" || fmt.Sprint(s.Details) != "[smoke test failed on g/a]" {
			t.Errorf("stop %+v", s)
		}
		if got := resultsOf(rep); got["g/a"] != ResultUpgraded || got["g/b"] != ResultNotStarted || got["g/c"] != ResultNotStarted {
			t.Errorf("results %v", got)
		}
		if v := specVersion(t, c, kcpGVK, "g", "b-cp"); v != "v1.34.2" {
			t.Errorf("the wave after the gate was touched: b at %s", v)
		}
		gates := rep.Waves[0].Gates
		if len(gates) != 2 || gates[0].Gate != GateSoak || !gates[0].Passed || gates[0].Seconds < 0.5 || gates[1].Passed {
			t.Errorf("canary gates %+v", gates)
		}
		if !p.has("gate: smoke test failed on g/a") {
			t.Errorf("the gate's output is not shown: %q", p.lines)
		}

		if err := os.WriteFile(ok, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err = ApplyFleet(ctx, c, req)
		if err != nil {
			t.Fatalf("re-run: %v (%+v)", err, rep.Stop)
		}
		if got := resultsOf(rep); got["g/a"] != ResultUpToDate || got["g/b"] != ResultUpgraded || got["g/c"] != ResultUpgraded {
			t.Errorf("re-run results %v", got)
		}
		data, _ := os.ReadFile(log)
		if want := "canary 1/2 g/a v1.35.0\ncanary 1/2 g/a v1.35.0\n- 2/2 g/b,g/c v1.35.0\n"; string(data) != want {
			t.Errorf("the gates saw:\n%s\nwant:\n%s", data, want)
		}
	})

	soakRunAs := func(t *testing.T, c client.Client, ns string, during func()) *FleetStop {
		t.Helper()
		var once sync.Once
		req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: ns}, Rollout: Rollout{Soak: Duration(20 * time.Second)}, Health: diagnose.SoakHealth,
			Timeout: 20 * time.Second, PollInterval: 200 * time.Millisecond}
		req.Progress = func(format string, args ...any) {
			if strings.Contains(fmt.Sprintf(format, args...), "soaking") {
				// Let the soak read its baseline first.
				time.AfterFunc(time.Second, func() { once.Do(during) })
			}
		}
		start := time.Now()
		rep, err := ApplyFleet(ctx, c, req)
		if !errors.Is(err, ErrFleetStopped) || rep.Stop == nil || rep.Stop.Gate != GateSoak || rep.Stop.At != "after wave -" {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("the soak stopped after %s, not at the finding", d)
		}
		if g := rep.Waves[0].Gates; len(g) != 1 || g[0].Passed {
			t.Errorf("gates %+v", g)
		}
		return rep.Stop
	}
	soakRun := func(t *testing.T, ns string, during func()) *FleetStop { return soakRunAs(t, c, ns, during) }

	t.Run("a cluster that stops being Available during the soak stops the rollout", func(t *testing.T) {
		s := soakRun(t, "s1", func() {
			setStatus(t, c, u(capiV1beta2.WithKind("Cluster"), "s1", "x", nil, nil), map[string]any{"conditions": []any{
				map[string]any{"type": "Available", "status": "False", "reason": "NotAvailable", "message": "control plane unreachable", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}})
		})
		if s.Reason != "cluster s1/x stopped being Available during the soak" || fmt.Sprint(s.Details) != "[Cluster Available is False: control plane unreachable]" {
			t.Errorf("stop %+v", s)
		}
	})

	t.Run("a Machine remediated by its MachineHealthCheck during the soak stops the rollout", func(t *testing.T) {
		var name string
		s := soakRun(t, "s2", func() {
			m := machinesOf(t, c, "s2", "x")[0]
			name = m.GetName()
			setStatus(t, c, &m, map[string]any{"conditions": []any{testCondition("UpToDate", "True"),
				map[string]any{"type": "OwnerRemediated", "status": "False", "reason": "WaitingForRemediation", "message": "Waiting for remediation", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}})
		})
		if s.Reason != fmt.Sprintf("cluster s2/x had Machine %s remediated by its MachineHealthCheck during the soak", name) || !strings.Contains(fmt.Sprint(s.Details), "OwnerRemediated is False: Waiting for remediation") {
			t.Errorf("stop %+v", s)
		}
	})

	t.Run("a new diagnose finding during the soak stops the rollout", func(t *testing.T) {
		s := soakRun(t, "s3", func() {
			mergePatch(t, c, u(capiV1beta2.WithKind("Cluster"), "s3", "x", nil, nil), `{"spec":{"paused":true}}`)
		})
		if !strings.HasPrefix(s.Reason, "cluster s3/x got a new diagnose finding cluster-paused:") || len(s.Details) == 0 {
			t.Errorf("stop %+v", s)
		}
	})

	t.Run("the canary Cluster deleted during its soak stops the rollout", func(t *testing.T) {
		s := soakRun(t, "s4", func() {
			if err := c.Delete(ctx, u(capiV1beta2.WithKind("Cluster"), "s4", "x", nil, nil)); err != nil {
				t.Error(err)
			}
		})
		if s.Reason != "cluster s4/x was deleted during the soak" || !strings.Contains(fmt.Sprint(s.Details), "not found") {
			t.Errorf("stop %+v", s)
		}
	})

	t.Run("the user's permission to read Clusters revoked during the soak stops the rollout", func(t *testing.T) {
		user := env.User(t, "soaker")
		env.GrantAllBut(t, "soaker", nil)
		s := soakRunAs(t, user, "s5", func() { env.Revoke(t, "soaker", capiV1beta2.Group, "clusters") })
		if s.Reason != "cluster s5/x could not be read during the soak" || !strings.Contains(fmt.Sprint(s.Details), "forbidden") ||
			!strings.Contains(fmt.Sprint(s.Details), "a soak that cannot read what it checks fails") {
			t.Errorf("stop %+v", s)
		}
	})

	t.Run("outside the window: --no-wait stops at once, without it the run waits", func(t *testing.T) {
		day := time.Now().UTC().AddDate(0, 0, 3).Weekday().String()[:3]
		before := resourceVersions(t, c)
		req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "w"}, Rollout: Rollout{Window: day + " 00:00-24:00 UTC"},
			NoWait: true, Timeout: 20 * time.Second, PollInterval: 200 * time.Millisecond}
		rep, err := ApplyFleet(ctx, c, req)
		if !errors.Is(err, ErrFleetStopped) || rep.Stop == nil || rep.Stop.Gate != GateWindow || rep.Stop.At != "before wave -" ||
			!strings.Contains(rep.Stop.Reason, "outside the window "+day+" 00:00-24:00 UTC; it opens next "+day+" ") {
			t.Fatalf("err = %v, stop %+v", err, rep.Stop)
		}
		req.NoWait = false
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var p progressLines
		req.Progress = func(format string, args ...any) {
			p.add(format, args...)
			if strings.Contains(fmt.Sprintf(format, args...), "waiting for the window") {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
		}
		rep, err = ApplyFleet(wctx, c, req)
		if !errors.Is(err, ErrFleetInterrupted) || !p.has("Wave -: waiting for the window "+day+" 00:00-24:00 UTC, it opens "+day) {
			t.Fatalf("err = %v, progress %q", err, p.lines)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Error("a run outside its window changed objects")
		}
		// In the window, it runs.
		req.Rollout.Window = time.Now().UTC().Weekday().String()[:3] + "," + time.Now().UTC().AddDate(0, 0, 1).Weekday().String()[:3] + " 00:00-24:00 UTC"
		req.Progress = nil
		if rep, err = ApplyFleet(ctx, c, req); err != nil || resultsOf(rep)["w/x"] != ResultUpgraded {
			t.Errorf("in the window: %v %v", err, resultsOf(rep))
		}
	})
}

// TestSoakFailsClosedWhenTheServerStops: a management API server that stops answering during
// the soak fails it after the bounded retries of a gate's reads, naming the read that failed;
// it never reports the soak as passed.
func TestSoakFailsClosedWhenTheServerStops(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "down")
	createFleetCluster(t, c, "down", "x", "v1.34.2", "")
	startStandIn(t, c, 2)
	var once sync.Once
	var p progressLines
	stopped := make(chan time.Time, 1)
	// A soak far longer than the test: only a failed soak ends it in time.
	req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "down"}, Rollout: Rollout{Soak: Duration(10 * time.Minute)}, Health: diagnose.SoakHealth,
		Timeout: 20 * time.Second, PollInterval: 200 * time.Millisecond}
	req.Progress = func(format string, args ...any) {
		p.add(format, args...)
		if strings.Contains(fmt.Sprintf(format, args...), "soaking") {
			time.AfterFunc(time.Second, func() { once.Do(func() { env.Stop(); stopped <- time.Now() }) })
		}
	}
	rep, err := ApplyFleet(ctx, c, req)
	if !errors.Is(err, ErrFleetStopped) || rep == nil || rep.Stop == nil || rep.Stop.Gate != GateSoak {
		t.Fatalf("err = %v, report %+v", err, rep)
	}
	// Where the server went away decides which read saw it first: the cluster's own reads (could
	// not be read) or the health check's (a reference it cannot read): either stops the wave.
	if r := rep.Stop.Reason; (r != "cluster down/x could not be read during the soak" && !strings.HasPrefix(r, "cluster down/x got a new diagnose finding reference-missing:")) ||
		!strings.Contains(fmt.Sprint(rep.Stop.Details), "connection refused") {
		t.Errorf("stop %+v", rep.Stop)
	}
	if g := rep.Waves[0].Gates; len(g) != 1 || g[0].Passed {
		t.Errorf("gates %+v", g)
	}
	select {
	case at := <-stopped:
		if d := time.Since(at); d > 2*time.Minute {
			t.Errorf("the soak ran %s with the server down: its retries are not bounded", d)
		}
	default:
		t.Error("the server was not stopped during the soak")
	}
	if p.has("soak passed") {
		t.Errorf("the soak passed: %q", p.lines)
	}
}
