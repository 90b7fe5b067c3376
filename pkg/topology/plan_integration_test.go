package topology_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/classfixture"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/topologytest"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/topology"
)

// planEnv is an API server with Cluster API's v1.14 CRDs, the in-memory ClusterClass and its
// templates in namespace "fleet", and two Clusters using it that no controller has reconciled
// yet (so the topology controller would create every object).
func planEnv(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	testenv.Integration(t)
	t.Parallel()
	return planEnvN(t, 2)
}

// planEnvN is planEnv with n Clusters (c-1 ... c-n).
func planEnvN(tb testing.TB, n int) (*testenv.Env, string) {
	tb.Helper()
	crds := testenv.ComponentCRDs(tb, "v1.14.0", "cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker")
	te := testenv.Start(tb, testenv.Options{CRDPaths: []string{crds}})
	te.CreateNamespaces(tb, "fleet")
	classfixture.Create(tb, te.Client, "v1.14.0", "fleet", nil)
	ctx := context.Background()
	for i := 1; i <= n; i++ {
		if err := te.Client.Create(ctx, topologyCluster("fleet", fmt.Sprintf("c-%d", i), "v1.34.2")); err != nil {
			tb.Fatal(err)
		}
	}
	return te, tb.TempDir()
}

func topologyCluster(ns, name, version string) *unstructured.Unstructured {
	return classfixture.Cluster(ns, name, version, 1)
}

func write(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// liveClassFile is the live class as a file, with a label added in its control plane metadata.
func liveClassFile(t *testing.T, te *testenv.Env, dir string) string {
	t.Helper()
	out := liveClass(t, te)
	_ = unstructured.SetNestedField(out.Object, "blue", "spec", "controlPlane", "metadata", "labels", "team")
	return writeObjects(t, dir, "class.json", out)
}

// TestPlanWritesNothing: a class change reaching two unreconciled Clusters plans the creation of
// every object the controller would make, and the API server is exactly as before (every
// object's uid and resourceVersion), the dry runs included.
func TestPlanWritesNothing(t *testing.T) {
	te, dir := planEnv(t)
	file := liveClassFile(t, te, dir)
	before := testenv.Snapshot(t, te.Client)
	res, err := topology.Plan(context.Background(), env.One(te.Client), topology.PlanRequest{Files: []string{file}, Concurrency: 2, Save: filepath.Join(dir, "plan.json")})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Unchanged(t, te.Client, before, "topology plan")
	if len(res.Clusters) != 2 {
		t.Fatalf("planned %d clusters, want 2: %+v", len(res.Clusters), res.Clusters)
	}
	for _, c := range res.Clusters {
		if c.Refused != "" || c.Partial != "" {
			t.Fatalf("%s: refused %q, partial %q", c.Name, c.Refused, c.Partial)
		}
		kinds := map[string]bool{}
		for _, ch := range c.Changes {
			// The controller creates every object of an unreconciled cluster, then points the
			// Cluster at its infrastructure cluster and control plane.
			if want := map[bool]string{true: "update", false: "create"}[ch.Kind == "Cluster"]; string(ch.Action) != want {
				t.Errorf("%s: %s %s %s, want %s", c.Name, ch.Action, ch.Kind, ch.Name, want)
			}
			kinds[ch.Kind] = true
		}
		for _, k := range []string{"DevCluster", "KubeadmControlPlane", "DevMachineTemplate", "MachineDeployment", "KubeadmConfigTemplate", "MachineHealthCheck"} {
			if !kinds[k] {
				t.Errorf("%s: no %s created in %+v", c.Name, k, c.Changes)
			}
		}
	}
	if res.ExitCode() != topology.ExitChanges {
		t.Errorf("exit code %d, want %d", res.ExitCode(), topology.ExitChanges)
	}
	if st, err := os.Stat(filepath.Join(dir, "plan.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("saved plan: %v %v", st, err)
	}
}

// TestPlanLeastPrivilege: a user who may read everything and patch (dry runs need it), and
// nothing else, gets the same plan; one who may not list Clusters gets an error naming them.
func TestPlanLeastPrivilege(t *testing.T) {
	te, dir := planEnv(t)
	file := liveClassFile(t, te, dir)
	req := topology.PlanRequest{Files: []string{file}, Concurrency: 2}
	admin, err := topology.Plan(context.Background(), env.One(te.Client), req)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := te.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "read-and-patch"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch", "patch"}}}}); err != nil {
		t.Fatal(err)
	}
	te.Bind(t, "reader", "read-and-patch")
	reader := te.User(t, "reader")
	before := testenv.Snapshot(t, te.Client)
	got, err := topology.Plan(ctx, env.One(reader), req)
	if err != nil {
		t.Fatalf("with get, list and patch: %v", err)
	}
	testenv.Unchanged(t, te.Client, before, "topology plan as a reader")
	if len(got.Clusters) != len(admin.Clusters) || got.ExitCode() != admin.ExitCode() {
		t.Errorf("the reader's plan differs: %d clusters exit %d, admin %d clusters exit %d", len(got.Clusters), got.ExitCode(), len(admin.Clusters), admin.ExitCode())
	}
	te.GrantAllBut(t, "no-clusters", map[string][]string{"clusters.cluster.x-k8s.io": {"list"}})
	_, err = topology.Plan(ctx, env.One(te.User(t, "no-clusters")), req)
	if err == nil || !strings.Contains(err.Error(), "Clusters") {
		t.Errorf("without list on clusters: %v", err)
	}
	// Without patch on one template kind the dry runs of its objects are forbidden: a change that
	// reaches such a template (each cluster reconciled, so its templates exist and are compared by
	// dry run) is planned partially (exit 3), naming what was refused, never shown as unchanged.
	if err := topologytest.Reconcile(ctx, te.Client, "fleet"); err != nil {
		t.Fatal(err)
	}
	te.GrantAllBut(t, "no-template-patch", map[string][]string{"devmachinetemplates.infrastructure.cluster.x-k8s.io": {"patch"}})
	worker := req
	worker.Files = []string{workerTemplateChange(t, te, dir)}
	partial, err := topology.Plan(ctx, env.One(te.User(t, "no-template-patch")), worker)
	if err != nil {
		t.Fatalf("without patch on DevMachineTemplates: %v", err)
	}
	if partial.ExitCode() != topology.ExitPartial || len(partial.Clusters) != len(admin.Clusters) {
		t.Errorf("without patch on DevMachineTemplates: exit %d, %d clusters; want %d and %d", partial.ExitCode(), len(partial.Clusters), topology.ExitPartial, len(admin.Clusters))
	}
	for _, c := range partial.Clusters {
		if !strings.Contains(c.Partial, "forbidden") || !strings.Contains(strings.ToLower(c.Partial), "devmachinetemplate") {
			t.Errorf("%s: partial %q; want the forbidden dry run of the DevMachineTemplate named", c.Name, c.Partial)
		}
	}
}

// TestPlanBadInput: what is refused before any cluster is planned, and what plans nothing.
func TestPlanBadInput(t *testing.T) {
	te, dir := planEnv(t)
	ctx := context.Background()
	plan := func(files ...string) (*topology.PlanResult, error) {
		return topology.Plan(ctx, env.One(te.Client), topology.PlanRequest{Files: files, Concurrency: 2})
	}
	for _, tc := range []struct{ name, text, want string }{
		{"configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "is not a ClusterClass, a provider template"},
		{"v1beta1.yaml", "apiVersion: cluster.x-k8s.io/v1beta1\nkind: ClusterClass\nmetadata: {name: x, namespace: fleet}\nspec: {}\n", "capctl convert -f"},
		{"broken.yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata:\n  name: x\n  labels: [\n", "line 5"},
	} {
		if _, err := plan(write(t, dir, tc.name, tc.text)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want it to say %q", tc.name, err, tc.want)
		}
	}
	// A class no cluster uses: nothing to plan, said so, exit 0.
	unused := write(t, dir, "unused.yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata: {name: nobody, namespace: fleet}\nspec:\n  infrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DevClusterTemplate, name: in-memory-cluster}}\n  controlPlane: {templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: in-memory-control-plane}}\n")
	res, err := plan(unused)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clusters) != 0 || res.ExitCode() != topology.ExitNoChanges || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "no cluster uses ClusterClass fleet/nobody") {
		t.Errorf("unused class: %+v", res)
	}
	// A Cluster whose class references a template that exists nowhere: not computed, named.
	missing := write(t, dir, "missing.yaml", `apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: in-memory, namespace: fleet}
spec:
  infrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DevClusterTemplate, name: gone}}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: in-memory-control-plane}
    machineInfrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DevMachineTemplate, name: in-memory-control-plane}}
  workers:
    machineDeployments:
    - class: default-worker
      bootstrap: {templateRef: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta2, kind: KubeadmConfigTemplate, name: in-memory-default-worker-bootstraptemplate}}
      infrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DevMachineTemplate, name: in-memory-default-worker-machinetemplate}}
`)
	res, err = plan(missing)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Clusters) != 2 || res.ExitCode() != topology.ExitPartial || !strings.Contains(res.Clusters[0].Partial, "DevClusterTemplate fleet/gone") {
		t.Errorf("missing template: exit %d %+v", res.ExitCode(), res.Clusters)
	}
}

// TestPlanReconciledClusters: on Clusters the topology controller's desired state was applied
// to (topologytest stands in for its first reconcile), the unchanged class plans nothing, and a
// new worker machine template rotates each Cluster's template and rolls md-0 out, and nothing
// else.
func TestPlanReconciledClusters(t *testing.T) {
	te, dir := planEnv(t)
	ctx := context.Background()
	if err := topologytest.Reconcile(ctx, te.Client, "fleet"); err != nil {
		t.Fatal(err)
	}
	class := liveClass(t, te)
	unchanged := writeObjects(t, dir, "unchanged.yaml", class)
	res, err := topology.Plan(ctx, env.One(te.Client), topology.PlanRequest{Files: []string{unchanged}, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode() != topology.ExitNoChanges || len(res.Clusters) != 2 {
		t.Fatalf("the unchanged class: exit %d, %+v", res.ExitCode(), res.Clusters)
	}
	before := testenv.Snapshot(t, te.Client)
	counting, dryRuns := dryRunCounter(t, te)
	res, err = topology.Plan(ctx, env.One(counting), topology.PlanRequest{Files: []string{workerTemplateChange(t, te, dir)}, Concurrency: 2, Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	settledDryRuns := dryRuns()
	testenv.Unchanged(t, te.Client, before, "topology plan")
	if res.ExitCode() != topology.ExitChanges || len(res.Clusters) != 2 {
		t.Fatalf("a new worker template: exit %d, %+v", res.ExitCode(), res.Clusters)
	}
	for _, c := range res.Clusters {
		if c.ControlPlane.RollsOut || len(c.MachineDeployments) != 1 || !c.MachineDeployments[0].RollsOut || !strings.Contains(c.MachineDeployments[0].Reason, "DevMachineTemplate rotated") {
			t.Errorf("%s: control plane %+v, MachineDeployments %+v", c.Name, c.ControlPlane, c.MachineDeployments)
		}
		if len(c.Changes) != 1 || c.Changes[0].Action != "rotate" || c.Changes[0].Kind != "DevMachineTemplate" || !strings.Contains(c.Changes[0].Diff, "4s") {
			t.Errorf("%s: changes %+v", c.Name, c.Changes)
		}
	}
	// The clusters are settled (TopologyReconciled, as the controller leaves them), so objects
	// the change leaves as the controller computed them were not dry-run. The same plan with
	// every object dry-run (c-1 no longer settled) is the same plan.
	cl := topologyCluster("fleet", "c-1", "")
	unsettled := []byte(`{"status":{"conditions":[{"type":"TopologyReconciled","status":"False","reason":"Planned","message":"","lastTransitionTime":"2026-12-07T00:00:00Z"}]}}`)
	if err := te.Client.Status().Patch(ctx, cl, client.RawPatch(types.MergePatchType, unsettled)); err != nil {
		t.Fatal(err)
	}
	full, err := topology.Plan(ctx, env.One(counting), topology.PlanRequest{Files: []string{filepath.Join(dir, "change.yaml")}, Concurrency: 2, Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res.Clusters)
	b, _ := json.Marshal(full.Clusters)
	if string(a) != string(b) {
		t.Errorf("the plan of settled clusters differs from the plan with every object dry-run:\n%s\n%s", a, b)
	}
	// Settled: per cluster, two dry runs (upstream's comparison makes two) for each object whose
	// desired state the change alters: the worker template and the MachineDeployment naming it.
	// With c-1 unsettled every object of c-1 is dry-run as well.
	if fullDryRuns := dryRuns() - settledDryRuns; settledDryRuns != 8 || fullDryRuns <= settledDryRuns {
		t.Errorf("dry runs: %d with both clusters settled (want 8), %d with c-1 not", settledDryRuns, fullDryRuns)
	}
}

// dryRunCounter is a client of te that counts the server-side dry runs it sends.
func dryRunCounter(t *testing.T, te *testenv.Env) (*cluster.Client, func() int) {
	t.Helper()
	var n atomic.Int64
	c, err := cluster.New(cluster.Options{Kubeconfig: te.Kubeconfig, OnRequest: func(method, url string, _ int, _ time.Duration, _ error) {
		if strings.Contains(url, "dryRun=All") {
			n.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c, func() int { return int(n.Load()) }
}

// workerTemplateChange writes the change of a new worker machine template (worker-v2, a longer
// startup) that the class's md-0 class names: every MachineDeployment rolls, in file
// change.yaml of dir.
func workerTemplateChange(t testing.TB, te *testenv.Env, dir string) string {
	t.Helper()
	worker := &unstructured.Unstructured{}
	worker.SetAPIVersion("infrastructure.cluster.x-k8s.io/v1beta2")
	worker.SetKind("DevMachineTemplate")
	if err := te.Client.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "in-memory-default-worker-machinetemplate"}, worker); err != nil {
		t.Fatal(err)
	}
	newWorker := &unstructured.Unstructured{Object: map[string]any{"apiVersion": worker.GetAPIVersion(), "kind": worker.GetKind(), "spec": worker.Object["spec"]}}
	newWorker.SetNamespace("fleet")
	newWorker.SetName("worker-v2")
	_ = unstructured.SetNestedField(newWorker.Object, "4s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
	class := liveClass(t, te)
	mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), "worker-v2", "infrastructure", "templateRef", "name")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	return writeObjects(t, dir, "change.yaml", newWorker, class)
}

func liveClass(t testing.TB, te *testenv.Env) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	u.SetKind("ClusterClass")
	if err := te.Client.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "in-memory"}, u); err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "spec": u.Object["spec"]}}
	out.SetName("in-memory")
	out.SetNamespace("fleet")
	return out
}

func writeObjects(t testing.TB, dir, name string, objs ...*unstructured.Unstructured) string {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	return write(t, dir, name, strings.Join(docs, "\n---\n"))
}

// TestPlanSeveralManagementClusters: with several management clusters each plans its own
// clusters (named by MANAGEMENT), and one that cannot be reached makes the plan partial.
func TestPlanSeveralManagementClusters(t *testing.T) {
	a, dir := planEnv(t)
	b, _ := planEnvN(t, 1)
	file := liveClassFile(t, a, dir)
	e := env.Env{Chosen: true, Management: []multicluster.Member{
		{Context: "a", Client: a.Client}, {Context: "b", Client: b.Client},
		{Context: "gone", Err: errors.New("connection refused")},
	}}
	res, err := topology.Plan(context.Background(), e, topology.PlanRequest{Files: []string{file}, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Clusters {
		got = append(got, c.ManagementCluster+"/"+c.Name)
	}
	if strings.Join(got, " ") != "a/c-1 a/c-2 b/c-1" {
		t.Errorf("clusters %v", got)
	}
	if len(res.ManagementClusters) != 3 || res.ManagementClusters[2].Error == "" || res.ExitCode() != topology.ExitPartial {
		t.Errorf("management clusters %+v, exit %d", res.ManagementClusters, res.ExitCode())
	}
}

// TestPlanSelection: -n, --cluster and -l narrow the clusters a change reaches, as the flags
// say, and a selection that leaves none plans nothing.
func TestPlanSelection(t *testing.T) {
	te, dir := planEnv(t)
	ctx := context.Background()
	file := liveClassFile(t, te, dir)
	c2 := &unstructured.Unstructured{}
	c2.SetGroupVersionKind(topologyCluster("fleet", "c-2", "").GroupVersionKind())
	if err := te.Client.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: "c-2"}, c2); err != nil {
		t.Fatal(err)
	}
	c2.SetLabels(map[string]string{"team": "blue"})
	if err := te.Client.Update(ctx, c2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  topology.PlanRequest
		want []string
	}{
		{"every cluster", topology.PlanRequest{}, []string{"c-1", "c-2"}},
		{"--cluster", topology.PlanRequest{Clusters: []string{"c-1"}}, []string{"c-1"}},
		{"-l", topology.PlanRequest{Selector: "team=blue"}, []string{"c-2"}},
		{"-l no match", topology.PlanRequest{Selector: "team=red"}, nil},
		{"-n fleet", topology.PlanRequest{Namespace: "fleet"}, []string{"c-1", "c-2"}},
		{"-n other", topology.PlanRequest{Namespace: "other"}, nil},
	} {
		req := tc.req
		req.Files, req.Concurrency = []string{file}, 2
		if err := req.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res, err := topology.Plan(ctx, env.One(te.Client), req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, c := range res.Clusters {
			got = append(got, c.Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: planned %v, want %v", tc.name, got, tc.want)
		}
		if len(tc.want) == 0 && res.ExitCode() != topology.ExitNoChanges {
			t.Errorf("%s: exit %d with nothing planned", tc.name, res.ExitCode())
		}
	}
}

// TestPlanAdmission: what upstream's admission refuses, the plan refuses with upstream's words:
// a template kind changed in the class (incompatible with the class its Clusters use), and a
// Cluster whose variable does not match the class's schema. Neither is planned further.
func TestPlanAdmission(t *testing.T) {
	te, dir := planEnv(t)
	ctx := context.Background()
	plan := func(objs ...*unstructured.Unstructured) *topology.PlanResult {
		t.Helper()
		res, err := topology.Plan(ctx, env.One(te.Client), topology.PlanRequest{Files: []string{writeObjects(t, dir, fmt.Sprintf("admission-%d.json", len(objs)), objs...)}, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// The infrastructure template's kind changed: the class is refused for every Cluster using it.
	class := liveClass(t, te)
	_ = unstructured.SetNestedField(class.Object, "DockerClusterTemplate", "spec", "infrastructure", "templateRef", "kind")
	res := plan(class)
	if res.ExitCode() != topology.ExitRefused || len(res.Clusters) != 2 {
		t.Fatalf("template kind changed: exit %d, %d clusters", res.ExitCode(), len(res.Clusters))
	}
	for _, c := range res.Clusters {
		if !strings.Contains(c.Refused, "spec.infrastructure.templateRef") || c.ControlPlane.RollsOut || len(c.Changes) != 0 {
			t.Errorf("%s: refused %q, changes %+v; want the templateRef named and nothing planned", c.Name, c.Refused, c.Changes)
		}
	}
	// A class variable of type integer, and a Cluster setting it to a string: that Cluster is
	// refused, naming the variable; the other is planned.
	class = liveClass(t, te)
	_ = unstructured.SetNestedSlice(class.Object, []any{map[string]any{"name": "workerCount", "required": false,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "integer"}}}}, "spec", "variables")
	c1 := topologyCluster("fleet", "c-1", "v1.34.2")
	_ = unstructured.SetNestedSlice(c1.Object, []any{map[string]any{"name": "workerCount", "value": "three"}}, "spec", "topology", "variables")
	res = plan(class, c1)
	if res.ExitCode() != topology.ExitRefused || len(res.Clusters) != 2 {
		t.Fatalf("invalid variable: exit %d, %d clusters", res.ExitCode(), len(res.Clusters))
	}
	for _, c := range res.Clusters {
		switch {
		case c.Name == "c-1" && !strings.Contains(c.Refused, "workerCount"):
			t.Errorf("c-1: refused %q; want the variable workerCount named", c.Refused)
		case c.Name == "c-2" && c.Refused != "":
			t.Errorf("c-2 sets no variable but was refused: %q", c.Refused)
		}
	}
}
