package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/versions"
)

// topologyStandIn plays, on envtest, the part of the topology controller a chained upgrade
// needs: when the control plane has rolled out and is behind spec.topology.version, it gives it
// the newest version the ClusterClass lists for the next minor and publishes what is left in
// status.controlPlane/workers.upgradePlan; once the control plane is at the target it gives the
// workers the target (the skew policy lets them skip the minors between). The standIn rolls the
// objects out. Its rule is written from the Cluster API documentation, not from capctl's plan.
// Like the real controller's requeue, it moves on only after what it set has been settled for
// settle, and not at all while held.
type topologyStandIn struct {
	c       client.Client
	ns      string
	name    string
	classes []string
	settle  time.Duration

	mu           sync.Mutex
	hold         bool
	settledSince time.Time
	// holdAt: the stand-in holds itself once the control plane has settled at this version, so
	// the test's interrupt there does not race a slow poll (under load the next step could
	// otherwise start, and even finish, before the interrupt).
	holdAt string
}

// setHold stops (true) or resumes the stand-in; resuming starts a new settle period.
func (s *topologyStandIn) setHold(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.settledSince = v, time.Now()
}

func (s *topologyStandIn) run(ctx context.Context) {
	for ctx.Err() == nil {
		_ = s.reconcile(ctx)
		_ = cluster.Sleep(ctx, 50*time.Millisecond)
	}
}

func (s *topologyStandIn) reconcile(ctx context.Context) error {
	get := func(o *unstructured.Unstructured, name string) error {
		return s.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: name}, o)
	}
	cl, cp, md := &unstructured.Unstructured{}, &unstructured.Unstructured{}, &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capiV1beta2.WithKind("Cluster"))
	cp.SetGroupVersionKind(kcpGVK)
	md.SetGroupVersionKind(mdGVK)
	for o, n := range map[*unstructured.Unstructured]string{cl: s.name, cp: s.name + "-cp", md: s.name + "-md"} {
		if err := get(o, n); err != nil {
			return err
		}
	}
	target, _, _ := unstructured.NestedString(cl.Object, "spec", "topology", "version")
	cpSpec, _, _ := unstructured.NestedString(cp.Object, "spec", "version")
	cpGot, _, _ := unstructured.NestedString(cp.Object, "status", "version")
	cpOG, _, _ := unstructured.NestedInt64(cp.Object, "status", "observedGeneration")
	mdSpec, _, _ := unstructured.NestedString(md.Object, "spec", "template", "spec", "version")
	mdOG, _, _ := unstructured.NestedInt64(md.Object, "status", "observedGeneration")
	cpSettled := cpOG == cp.GetGeneration() && cpGot == cpSpec
	mdSettled := mdOG == md.GetGeneration()
	s.mu.Lock()
	if !cpSettled || !mdSettled || s.settledSince.IsZero() {
		s.settledSince = time.Now()
	}
	if s.holdAt != "" && cpSettled && cpSpec == s.holdAt {
		s.hold, s.holdAt = true, ""
	}
	ready := !s.hold && time.Since(s.settledSince) >= s.settle
	s.mu.Unlock()

	// The plan from the current control-plane version: the newest listed version of every
	// minor after it, up to the target.
	var plan []string
	tv, cv := versions.MustParse(target), versions.MustParse(cpSpec)
	for m := cv.Minor() + 1; m <= tv.Minor(); m++ {
		newest := ""
		for _, v := range s.classes {
			if pv := versions.MustParse(v); pv.Minor() == m && !pv.GreaterThan(tv) && (newest == "" || pv.GreaterThan(versions.MustParse(newest))) {
				newest = v
			}
		}
		plan = append(plan, newest)
	}
	switch {
	case ready && len(plan) > 0:
		if err := s.c.Patch(ctx, cp, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"version":"`+plan[0]+`"}}`))); err != nil {
			return err
		}
		plan = plan[1:]
		s.mu.Lock()
		s.settledSince = time.Time{}
		s.mu.Unlock()
	case ready && cpSpec == target && mdSpec != target:
		if err := s.c.Patch(ctx, md, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"template":{"spec":{"version":"`+target+`"}}}}`))); err != nil {
			return err
		}
		mdSpec = target
		s.mu.Lock()
		s.settledSince = time.Time{}
		s.mu.Unlock()
	}
	status := map[string]any{}
	reconciled := "True"
	if len(plan) > 0 {
		status["controlPlane"] = map[string]any{"upgradePlan": planItems(plan)}
	}
	if mdSpec != target {
		status["workers"] = map[string]any{"upgradePlan": planItems([]string{target})}
	}
	if cpSpec != target || mdSpec != target {
		reconciled = "False"
	}
	status["conditions"] = []any{testCondition("Available", "True"), testCondition("TopologyReconciled", reconciled)}
	return setStatusErr(ctx, s.c, cl, status)
}

func planItems(vs []string) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = map[string]any{"version": v}
	}
	return out
}

// TestApplyFleetChainedOnAPIServer: a ClusterClass cluster whose class lists kubernetesVersions,
// v1.34.2 to v1.36.0. The run sets spec.topology.version once and follows the plan the (stand-in)
// topology controller publishes; Ctrl-C after the control plane reached v1.35.0 stops it, and the
// same command again continues from the cluster's state: it patches nothing, reports the steps
// still to go, and is done only at the target.
func TestApplyFleetChainedOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "chain")
	classVersions := []string{"v1.34.2", "v1.35.0", "v1.35.3", "v1.36.0"}
	cc := u(capiV1beta2.WithKind("ClusterClass"), "chain", "class", nil, map[string]any{
		"controlPlane":       map[string]any{"templateRef": map[string]any{"apiVersion": kcpGVK.GroupVersion().String(), "kind": "KubeadmControlPlaneTemplate", "name": "cp"}},
		"infrastructure":     map[string]any{"templateRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate", "name": "infra"}},
		"kubernetesVersions": []any{"v1.34.2", "v1.35.0", "v1.35.3", "v1.36.0"},
	})
	if err := c.Create(ctx, cc); err != nil {
		t.Fatal(err)
	}
	createFleetCluster(t, c, "chain", "p", "v1.34.2", "")
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(capiV1beta2.WithKind("Cluster"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "chain", Name: "p"}, cl); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cl.Object, map[string]any{"classRef": map[string]any{"name": "class"}, "version": "v1.34.2"}, "spec", "topology")
	if err := c.Update(ctx, cl); err != nil {
		t.Fatal(err)
	}

	sctx, stopStandIns := context.WithCancel(ctx)
	defer stopStandIns()
	si := &standIn{c: c, stuck: map[string]bool{}}
	go si.run(sctx)
	topo := &topologyStandIn{c: c, ns: "chain", name: "p", classes: classVersions, settle: 700 * time.Millisecond, holdAt: "v1.35.3"}
	go topo.run(sctx)
	waitFor(t, func() bool { return len(si.events()) >= 2 }) // the first Machines exist
	waitFor(t, func() bool {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cl), cl); err != nil {
			return false
		}
		st, _ := condition(cl, "TopologyReconciled")
		return st == "True"
	})

	// First run: interrupted once the control plane finished v1.35.3.
	runCtx, interrupt := context.WithCancel(ctx)
	var mu sync.Mutex
	var lines []string
	progress := func(format string, args ...any) {
		line := strings.TrimSpace(fmt.Sprintf(format, args...))
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		if strings.Contains(line, "control plane v1.35.3 done") {
			topo.setHold(true) // nothing moves between the two runs
			interrupt()
		}
	}
	req := FleetApplyRequest{KubernetesVersion: "v1.36.0", Selection: FleetSelection{Namespace: "chain"}, Timeout: 30 * time.Second,
		PollInterval: 100 * time.Millisecond, Progress: progress}
	rep, err := ApplyFleet(runCtx, c, req)
	if !errors.Is(err, ErrFleetInterrupted) {
		t.Fatalf("first run: err = %v, progress %q", err, lines)
	}
	first := rep.Waves[0].Clusters[0]
	if got := stepList(first.Steps); !strings.HasPrefix(got, "control plane v1.35.3 done") || first.Result != ResultInterrupted {
		t.Errorf("first run: %s, steps %q", first.Result, got)
	}
	if len(first.Steps) == 0 || !first.Steps[0].TopologyPlan || !slices.Equal(first.Steps[0].Patched, []string{"Cluster p spec.topology.version"}) {
		t.Errorf("first run's first step %+v: want the topology patch on it", first.Steps)
	}
	if !containsLine(lines, "topology controller's plan (control plane v1.36.0; workers v1.36.0)") {
		t.Errorf("progress lacks the plan: %q", lines)
	}

	// The same command again: nothing patched, the steps still to go, done at the target.
	gens := generations(t, c, "chain")
	lines = nil
	var once sync.Once
	req.Progress = func(format string, args ...any) {
		once.Do(func() { topo.setHold(false) })
		mu.Lock()
		lines = append(lines, strings.TrimSpace(fmt.Sprintf(format, args...)))
		mu.Unlock()
	}
	rep, err = ApplyFleet(ctx, c, req)
	if err != nil {
		t.Fatalf("re-run: %v, progress %q", err, lines)
	}
	again := rep.Waves[0].Clusters[0]
	t.Logf("first run: %s %q; re-run: %s %q", first.Result, stepList(first.Steps), again.Result, stepList(again.Steps))
	if got := stepList(again.Steps); again.Result != ResultUpgraded || !strings.Contains(got, "control plane v1.36.0 done") || !strings.Contains(got, "workers v1.36.0 done") || strings.Contains(got, "v1.35") {
		t.Errorf("re-run: %s, steps %q", again.Result, got)
	}
	for _, st := range again.Steps {
		if len(st.Patched) > 0 || !st.TopologyPlan {
			t.Errorf("re-run step %+v: want nothing patched, by the topology plan", st)
		}
	}
	if now := generations(t, c, "chain"); now["Cluster/p"] != gens["Cluster/p"] {
		t.Errorf("the re-run patched the Cluster: generation %d, then %d", gens["Cluster/p"], now["Cluster/p"])
	}
	// The controllers' order: the control plane through the newest v1.35 patch, the workers
	// straight from v1.34.2 to v1.36.0.
	var rolled []string
	for _, e := range si.events() {
		if !strings.HasSuffix(e, " v1.34.2") {
			rolled = append(rolled, e)
		}
	}
	if want := []string{"chain/p-cp v1.35.3", "chain/p-cp v1.36.0", "chain/p-md v1.36.0"}; !slices.Equal(rolled, want) {
		t.Errorf("rollouts %v, want %v", rolled, want)
	}
	for _, o := range []struct{ kind, name string }{{kcpGVK.Kind, "p-cp"}, {mdGVK.Kind, "p-md"}} {
		gvk := kcpGVK
		if o.kind == mdGVK.Kind {
			gvk = mdGVK
		}
		if v := specVersion(t, c, gvk, "chain", o.name); v != "v1.36.0" {
			t.Errorf("%s %s at %s", o.kind, o.name, v)
		}
	}
}

func containsLine(lines []string, sub string) bool {
	for _, l := range lines {
		if strings.Contains(l, sub) {
			return true
		}
	}
	return false
}
