package fleetupgrade

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// deleteFleetCluster deletes what createFleetCluster made (its Machines are left: nothing reads
// Machines without their Cluster).
func deleteFleetCluster(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	for _, o := range []*unstructured.Unstructured{
		u(capiV1beta2.WithKind("Cluster"), ns, name, nil, nil), u(kcpGVK, ns, name+"-cp", nil, nil), u(mdGVK, ns, name+"-md", nil, nil),
	} {
		if err := c.Delete(testenv.Context(t), o); err != nil {
			t.Fatalf("deleting %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
}

func mergePatch(t *testing.T, c client.Client, o *unstructured.Unstructured, patch string) {
	t.Helper()
	if err := c.Patch(testenv.Context(t), o, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("patching %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func createClass(t *testing.T, c client.Client, ns, name string, versions ...any) {
	t.Helper()
	cc := u(capiV1beta2.WithKind("ClusterClass"), ns, name, nil, map[string]any{
		"controlPlane":       map[string]any{"templateRef": map[string]any{"apiVersion": kcpGVK.GroupVersion().String(), "kind": "KubeadmControlPlaneTemplate", "name": "cp"}},
		"infrastructure":     map[string]any{"templateRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate", "name": "infra"}},
		"kubernetesVersions": versions,
	})
	if err := c.Create(testenv.Context(t), cc); err != nil {
		t.Fatal(err)
	}
}

// TestApplyPlanFileOnAPIServer saves a plan, changes the clusters in every way a plan can drift
// (a cluster gone, recreated, its spec changed, its version changed by someone else, moved to
// another wave, another ClusterClass, a cluster added) and edits the file: `apply --plan` refuses
// listing every drift and changes nothing (every resourceVersion compared). Then a plan applied
// as saved stops before its second wave when a cluster joins the selection meanwhile, and the same
// --plan, once the cluster is gone again, resumes from the clusters' state and finishes.
func TestApplyPlanFileOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "drift", "ok")
	dir := t.TempDir()

	t.Run("every drift is listed and nothing changes", func(t *testing.T) {
		for _, n := range []string{"gone", "recreated", "spec", "version", "moved"} {
			wave := "1"
			if n == "moved" {
				wave = "2"
			}
			createFleetCluster(t, c, "drift", n, "v1.34.2", wave)
		}
		createClass(t, c, "drift", "class-a", "v1.34.2", "v1.35.0")
		createClass(t, c, "drift", "class-b", "v1.34.2", "v1.35.0")
		createFleetCluster(t, c, "drift", "topo", "v1.34.2", "2")
		topo := u(capiV1beta2.WithKind("Cluster"), "drift", "topo", nil, nil)
		mergePatch(t, c, topo, `{"spec":{"topology":{"classRef":{"name":"class-a"},"version":"v1.34.2"}}}`)

		path := filepath.Join(dir, "drift.json")
		plan, err := PlanFleet(ctx, c, c.Mapper, FleetPlanRequest{KubernetesVersion: "1.35.0", Selection: FleetSelection{Namespace: "drift"}, Rollout: Rollout{MaxParallel: 2}, Save: path})
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("plan file: %v, mode %v, want 0600", err, st.Mode())
		}
		if !strings.HasPrefix(plan.Digest, "sha256:") || plan.SavedTo != path || len(plan.Waves) != 2 || len(plan.Waves[0].Clusters) != 4 {
			t.Fatalf("plan %+v", plan)
		}
		saved, _ := os.ReadFile(path)
		for _, want := range []string{`"apiVersion": "capctl.io/v1alpha1"`, `"kind": "FleetUpgradePlan"`, `"uid": "`, `"generation": 1`, `"resourceVersion": "`, `"clusterClass": "drift/class-a"`, `"maxParallel": 2`, `"digest": "` + plan.Digest} {
			if !strings.Contains(string(saved), want) {
				t.Errorf("plan file lacks %s:\n%s", want, saved)
			}
		}
		// Unchanged, the plan applies (as a dry run here: nothing is written).
		if _, err := ApplyFleet(ctx, c, FleetApplyRequest{Plan: path, DryRun: true, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond}); err != nil {
			t.Fatalf("the unchanged plan was refused: %v", err)
		}

		deleteFleetCluster(t, c, "drift", "gone")
		deleteFleetCluster(t, c, "drift", "recreated")
		createFleetCluster(t, c, "drift", "recreated", "v1.34.2", "1")
		mergePatch(t, c, u(capiV1beta2.WithKind("Cluster"), "drift", "spec", nil, nil), `{"spec":{"clusterNetwork":{"serviceDomain":"edited.local"}}}`)
		mergePatch(t, c, u(kcpGVK, "drift", "version-cp", nil, nil), `{"spec":{"version":"v1.34.3"}}`)
		mergePatch(t, c, u(capiV1beta2.WithKind("Cluster"), "drift", "moved", nil, nil), `{"metadata":{"labels":{"upgrade-wave":"1"}}}`)
		mergePatch(t, c, topo, `{"spec":{"topology":{"classRef":{"name":"class-b"}}}}`)
		createFleetCluster(t, c, "drift", "added", "v1.34.2", "1")

		before := resourceVersions(t, c)
		_, err = ApplyFleet(ctx, c, FleetApplyRequest{Plan: path, Timeout: 10 * time.Second, PollInterval: 100 * time.Millisecond})
		var de *DriftError
		if !errors.As(err, &de) {
			t.Fatalf("err = %v, want a DriftError", err)
		}
		msg := err.Error()
		for _, want := range []string{
			"drift/gone: gone from the selection",
			"drift/recreated: recreated since the plan (UID",
			"drift/spec: spec changed since the plan (metadata.generation 2, planned 1; resourceVersion",
			"drift/version: control plane is at v1.34.3, planned from v1.34.2 (changed by someone else)",
			"drift/moved: now in wave 1, planned in wave 2",
			"drift/topo: ClusterClass is drift/class-b, planned drift/class-a",
			"drift/topo: spec changed since the plan (metadata.generation 3, planned 2;",
			"drift/added: added to the selection since the plan",
			"before the first patch",
		} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal lacks %q:\n%s", want, msg)
			}
		}
		if len(de.Drifts) != 8 {
			t.Errorf("%d drifts, want 8: %q", len(de.Drifts), de.Drifts)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects:\n%v\n%v", before, after)
		}

		// An edited file: its digest no longer matches, and that is listed first.
		edited := strings.Replace(string(saved), `"maxParallel": 2`, `"maxParallel": 9`, 1)
		if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err = ApplyFleet(ctx, c, FleetApplyRequest{Plan: path, Timeout: 10 * time.Second})
		if !errors.As(err, &de) || !strings.Contains(de.Drifts[0], "was edited after it was saved: it says digest "+plan.Digest) {
			t.Errorf("edited file: %v", err)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(saved), `"kind"`, `"extra": 1, "kind"`, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err = ApplyFleet(ctx, c, FleetApplyRequest{Plan: path}); err == nil || !strings.Contains(err.Error(), `unknown field "extra"`) {
			t.Errorf("unknown field: %v", err)
		}
		if _, err = ApplyFleet(ctx, c, FleetApplyRequest{Plan: path, KubernetesVersion: "v1.35.0"}); err == nil || !strings.Contains(err.Error(), "cannot also be given") {
			t.Errorf("plan with a version: %v", err)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects:\n%v\n%v", before, after)
		}
	})

	t.Run("a drift before a later wave stops there, the same plan resumes", func(t *testing.T) {
		createFleetCluster(t, c, "ok", "p", "v1.34.2", "1")
		createFleetCluster(t, c, "ok", "q", "v1.34.2", "2")
		startStandIn(t, c, 4)

		path := filepath.Join(dir, "ok.json")
		if _, err := PlanFleet(ctx, c, c.Mapper, FleetPlanRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "ok"}, Save: path}); err != nil {
			t.Fatal(err)
		}
		req := FleetApplyRequest{Plan: path, Timeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}
		req.Progress = func(format string, args ...any) {
			if strings.HasPrefix(fmt.Sprintf(format, args...), "Wave 1: done") {
				createFleetCluster(t, c, "ok", "late", "v1.34.2", "2") // joins the selection between the waves
			}
		}
		rep, err := ApplyFleet(ctx, c, req)
		if !errors.Is(err, ErrFleetStopped) || rep == nil || rep.Stop == nil {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		if rep.Stop.At != "before wave 2" || rep.Stop.Gate != "plan" || fmt.Sprint(rep.Stop.Details) != "[cluster ok/late: added to the selection since the plan]" {
			t.Errorf("stop %+v", rep.Stop)
		}
		if got := resultsOf(rep); got["ok/p"] != ResultUpgraded || got["ok/q"] != ResultNotStarted {
			t.Errorf("results %v", got)
		}
		if v := specVersion(t, c, kcpGVK, "ok", "q-cp"); v != "v1.34.2" {
			t.Errorf("wave 2 was touched: q at %s", v)
		}
		if rep.PlanDigest == "" {
			t.Error("the report does not name the plan's digest")
		}

		deleteFleetCluster(t, c, "ok", "late")
		req.Progress = nil
		rep, err = ApplyFleet(ctx, c, req)
		if err != nil {
			t.Fatalf("resumed run: %v (%+v)", err, rep)
		}
		if got := resultsOf(rep); got["ok/p"] != ResultUpToDate || got["ok/q"] != ResultUpgraded {
			t.Errorf("resumed results %v", got)
		}
	})
}
