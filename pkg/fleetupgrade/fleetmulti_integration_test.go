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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// planRows and reportRows list a plan's or a report's rows as "wave: ns/name on mgmt", in order.
func planRows(p *FleetPlan) []string {
	var out []string
	for _, w := range p.Waves {
		for _, cu := range w.Clusters {
			out = append(out, w.Name()+": "+cu.Ref())
		}
	}
	return out
}

func reportRows(r *FleetApplyReport) []string {
	var out []string
	for _, w := range r.Waves {
		for _, c := range w.Clusters {
			out = append(out, w.Wave+": "+c.Ref())
		}
	}
	return out
}

// fleetGenerations are the generations of the Clusters, control planes and MachineDeployments of
// namespace ns on every management cluster, by "mgmt kind/name".
func fleetGenerations(t *testing.T, names []string, envs []*testenv.Env, ns string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for i, e := range envs {
		for k, g := range generations(t, e.Client, ns) {
			out[names[i]+" "+k] = g
		}
	}
	return out
}

// TestApplyFleetAcrossManagementClusters runs the fleet apply over three real API servers, each
// a management cluster with a wave-1 and a wave-2 cluster, a stand-in controller on each. The
// plan shows the waves the apply follows; wave 2 starts on no management cluster while a wave-1
// cluster of another is not done; a run interrupted then is resumed by the same call, which
// patches nothing twice; and an unreachable management cluster refuses the apply before any patch.
func TestApplyFleetAcrossManagementClusters(t *testing.T) {
	// Not parallel: it sets KUBECONFIG for the process.
	testenv.Integration(t)
	crds := filepath.Join(testenv.FixturesDir(t), "crds")
	envs := testenv.StartN(t, 3, testenv.Options{CRDPaths: []string{
		filepath.Join(crds, "cluster.x-k8s.io.yaml"), filepath.Join(crds, "controlplane.cluster.x-k8s.io.yaml"),
	}})
	ctx := testenv.Context(t)
	names := []string{"mgmt-1", "mgmt-2", "mgmt-3"}
	sctx, stopStandIns := context.WithCancel(ctx)
	defer stopStandIns()
	var paths []string
	standIns := map[string]*standIn{}
	for i, e := range envs {
		paths = append(paths, e.KubeconfigAs(t, names[i]))
		e.CreateNamespaces(t, "prod")
		createFleetCluster(t, e.Client, "prod", "w1", "v1.34.2", "1")
		createFleetCluster(t, e.Client, "prod", "w2", "v1.34.2", "2")
		si := &standIn{c: e.Client, stuck: map[string]bool{}}
		standIns[names[i]] = si
		go si.run(sctx)
	}
	for _, si := range standIns {
		waitFor(t, func() bool { return len(si.events()) == 4 }) // the initial rollout
	}
	t.Setenv("KUBECONFIG", strings.Join(paths, string(os.PathListSeparator)))
	open := func() []multicluster.Member {
		t.Helper()
		ms, err := multicluster.Open(ctx, cluster.Options{ConnectTimeout: 3 * time.Second}, multicluster.Selection{All: true})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	members := open()
	req := FleetApplyRequest{KubernetesVersion: "v1.35.0", Rollout: Rollout{MaxParallel: 3}, Timeout: 30 * time.Second, PollInterval: 100 * time.Millisecond}
	wantRows := []string{
		"1: prod/w1 on mgmt-1", "1: prod/w1 on mgmt-2", "1: prod/w1 on mgmt-3",
		"2: prod/w2 on mgmt-1", "2: prod/w2 on mgmt-2", "2: prod/w2 on mgmt-3",
	}

	t.Run("the plan shows the waves the apply follows", func(t *testing.T) {
		before := fleetGenerations(t, names, envs, "prod")
		plan, err := planView(ctx, members, FleetPlanRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "prod"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := planRows(&plan.FleetPlan); fmt.Sprint(got) != fmt.Sprint(wantRows) {
			t.Errorf("plan rows\n got %q\nwant %q", got, wantRows)
		}
		for _, m := range plan.ManagementClusters {
			if !m.Reachable || m.Error != "" || m.Clusters != 2 || m.Contract != "v1beta2" {
				t.Errorf("summary %+v", m)
			}
		}
		dry := req
		dry.DryRun = true
		dry.Selection.Namespace = "prod"
		rep, err := Apply(ctx, several(members), dry)
		if err != nil {
			t.Fatal(err)
		}
		if got := reportRows(rep); fmt.Sprint(got) != fmt.Sprint(wantRows) {
			t.Errorf("dry-run rows\n got %q\nwant %q (the plan's)", got, wantRows)
		}
		if len(rep.ManagementClusters) != 3 || rep.Preflight.DryRunPatches != 6 {
			t.Errorf("management clusters %+v, %d dry-run patches", rep.ManagementClusters, rep.Preflight.DryRunPatches)
		}
		if after := fleetGenerations(t, names, envs, "prod"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("plan and dry run changed objects: %v -> %v", before, after)
		}
	})

	t.Run("wave 2 waits for wave 1 on every management cluster; a re-run after Ctrl-C patches nothing twice", func(t *testing.T) {
		standIns["mgmt-3"].setStuck("prod/w1", true) // mgmt-3's wave-1 cluster cannot finish yet
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		var mu sync.Mutex
		seen := map[string]bool{}
		var w2OnMgmt2 string
		r := req
		r.Progress = func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			mu.Lock()
			defer mu.Unlock()
			for _, want := range []string{"prod/w1 on mgmt-1: at v1.35.0", "prod/w1 on mgmt-2: at v1.35.0", "prod/w1 on mgmt-3: set KubeadmControlPlane w1-cp"} {
				if strings.Contains(line, want) {
					seen[want] = true
				}
			}
			if len(seen) == 3 && w2OnMgmt2 == "" {
				w2OnMgmt2 = "waiting"
				go func() {
					// Give a wrongly started wave 2 time to patch, then look and press Ctrl-C.
					time.Sleep(time.Second)
					v := readSpecVersion(envs[1].Client, "prod", "w2-cp")
					mu.Lock()
					w2OnMgmt2 = v
					mu.Unlock()
					cancel()
				}()
			}
		}
		rep, err := Apply(ictx, several(members), r)
		if !errors.Is(err, ErrFleetInterrupted) || rep == nil || !rep.Interrupted {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		mu.Lock()
		if w2OnMgmt2 != "v1.34.2" {
			t.Errorf("mgmt-2's wave-2 control plane was %q while mgmt-3's wave 1 was not done, want v1.34.2", w2OnMgmt2)
		}
		mu.Unlock()
		for i := range envs {
			if v := specVersion(t, envs[i].Client, kcpGVK, "prod", "w2-cp"); v != "v1.34.2" {
				t.Errorf("%s: wave 2 was touched after the interrupt: %s", names[i], v)
			}
		}
		if got := resultsByRef(rep); got["prod/w1 on mgmt-1"] != ResultUpgraded || got["prod/w1 on mgmt-3"] != ResultInterrupted || got["prod/w2 on mgmt-2"] != ResultNotStarted {
			t.Errorf("results %v", got)
		}
		// The rollout is recorded, the same, in every management cluster it touched.
		for i := range envs {
			recs, err := History(ctx, envs[i].Client, HistoryRequest{Name: rep.Record})
			if err != nil {
				t.Fatalf("%s: %v", names[i], err)
			}
			r := recs[0]
			var w1 []string
			for _, c := range r.Waves[0].Clusters {
				w1 = append(w1, c.ManagementCluster+"="+c.Result)
			}
			if r.State != RolloutInterrupted || len(r.Selection.ManagementClusters) != 3 || fmt.Sprint(w1) != "[mgmt-1=Upgraded mgmt-2=Upgraded mgmt-3=Interrupted]" {
				t.Errorf("%s's record: %s, %v, wave 1 %v", names[i], r.State, r.Selection.ManagementClusters, w1)
			}
		}

		// The same call again: mgmt-3's control plane rollout under way is waited for, not
		// patched again; then its workers, then wave 2 everywhere.
		before := fleetGenerations(t, names, envs, "prod")
		var order []string
		r = req
		r.Progress = func(format string, args ...any) {
			line := fmt.Sprintf(format, args...)
			mu.Lock()
			order = append(order, line)
			mu.Unlock()
			if strings.Contains(line, "prod/w1 on mgmt-3: control plane v1.35.0 already set, waiting") {
				standIns["mgmt-3"].setStuck("prod/w1", false)
			}
		}
		rep, err = Apply(ctx, several(members), r)
		if err != nil {
			t.Fatalf("resumed: %v", err)
		}
		after := fleetGenerations(t, names, envs, "prod")
		for k, g := range after {
			want := before[k]
			switch {
			case strings.Contains(k, "w2-cp") || strings.Contains(k, "w2-md") || k == "mgmt-3 MachineDeployment/w1-md":
				want++ // patched once by the re-run
			}
			if g != want {
				t.Errorf("%s: generation %d -> %d, want %d (patched nothing twice)", k, before[k], g, want)
			}
		}
		results := resultsByRef(rep)
		if results["prod/w1 on mgmt-1"] != ResultUpToDate || results["prod/w1 on mgmt-3"] != ResultUpgraded || results["prod/w2 on mgmt-2"] != ResultUpgraded {
			t.Errorf("resumed results %v", results)
		}
		w1 := rep.Waves[0].Clusters[2]
		if w1.ManagementCluster != "mgmt-3" || len(w1.Steps) != 2 || len(w1.Steps[0].Patched) != 0 || !w1.Steps[0].Done {
			t.Errorf("mgmt-3's w1: %+v (its control plane rollout under way, not patched again)", w1)
		}
		mu.Lock()
		done, firstWave2 := -1, -1
		for i, l := range order {
			if strings.Contains(l, "prod/w1 on mgmt-3: at v1.35.0") {
				done = i
			}
			if firstWave2 < 0 && strings.Contains(l, "prod/w2 on") && strings.Contains(l, ": set ") {
				firstWave2 = i
			}
		}
		mu.Unlock()
		if done < 0 || firstWave2 < done {
			t.Errorf("wave 2 patched (line %d) before mgmt-3's wave 1 was done (line %d):\n%s", firstWave2, done, strings.Join(order, "\n"))
		}
	})

	t.Run("an unreachable management cluster refuses the apply before any patch", func(t *testing.T) {
		before := fleetGenerations(t, names[:2], envs[:2], "prod")
		envs[2].Stop()
		ms := open()
		_, err := Apply(ctx, several(ms), FleetApplyRequest{KubernetesVersion: "v1.36.0", Rollout: Rollout{MaxParallel: 3}, Timeout: 5 * time.Second, PollInterval: 100 * time.Millisecond})
		var pe *PreflightError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "management cluster mgmt-3 cannot be used: management cluster unreachable") {
			t.Fatalf("err = %v, want a refusal naming mgmt-3", err)
		}
		if after := fleetGenerations(t, names[:2], envs[:2], "prod"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects: %v -> %v", before, after)
		}
		plan, err := planView(ctx, ms, FleetPlanRequest{KubernetesVersion: "v1.36.0", Selection: FleetSelection{}})
		if err != nil {
			t.Fatal(err)
		}
		if code := multicluster.ExitCode(plan.ManagementClusters, false); code != multicluster.ExitUnreadable {
			t.Errorf("plan exit code %d, want %d", code, multicluster.ExitUnreadable)
		}
		if n := len(planRows(&plan.FleetPlan)); n != 4 {
			t.Errorf("plan of the two reachable management clusters: %d rows, want 4", n)
		}

		// A management cluster that fails its contract check (no Cluster CRD any more) is named too.
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		crd.SetName("clusters.cluster.x-k8s.io")
		if err := envs[1].Client.Delete(ctx, crd); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			return apierrors.IsNotFound(envs[1].Client.Get(ctx, client.ObjectKeyFromObject(crd), crd))
		})
		before = fleetGenerations(t, names[:1], envs[:1], "prod")
		_, err = Apply(ctx, several(open()), FleetApplyRequest{KubernetesVersion: "v1.36.0", Timeout: 5 * time.Second})
		if !errors.As(err, &pe) || len(pe.Problems) != 2 || !strings.Contains(pe.Problems[0], "management cluster mgmt-2 cannot be used: ") ||
			!strings.Contains(pe.Problems[1], "management cluster mgmt-3 cannot be used") {
			t.Fatalf("err = %v, want a refusal naming mgmt-2 (contract check) and mgmt-3", err)
		}
		if after := fleetGenerations(t, names[:1], envs[:1], "prod"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects: %v -> %v", before, after)
		}
	})
}

func resultsByRef(r *FleetApplyReport) map[string]string {
	out := map[string]string{}
	for _, w := range r.Waves {
		for _, c := range w.Clusters {
			out[c.Ref()] = c.Result
		}
	}
	return out
}

func readSpecVersion(c client.Client, ns, name string) string {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(kcpGVK)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		return "error: " + err.Error()
	}
	v, _, _ := unstructured.NestedString(o.Object, "spec", "version")
	return v
}

// several is the Env of a --contexts run over ms.
func several(ms []multicluster.Member) env.Env { return env.Env{Management: ms, Chosen: true} }

// planView is the fleet plan over ms as one view.
func planView(ctx context.Context, ms []multicluster.Member, req FleetPlanRequest) (*FleetPlanView, error) {
	res, err := Plan(ctx, several(ms), req)
	if err != nil {
		return nil, err
	}
	return res.Many, nil
}
