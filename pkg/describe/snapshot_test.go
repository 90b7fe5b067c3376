package describe_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/pkg/describe"
)

// goldenCase is one golden tree: the snapshot it is built from (testdata/snapshots/NAME.yaml,
// recorded from a real API server by the integration tests) and the presentation options.
type goldenCase struct {
	name     string
	snapshot string
	opts     describe.ClusterRequest
}

func goldenCases() []goldenCase {
	base := func(s *describetest.Scenario) describe.ClusterRequest {
		return describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true}
	}
	with := func(o describe.ClusterRequest, f func(*describe.ClusterRequest)) describe.ClusterRequest {
		f(&o)
		return o
	}
	healthy, prov, up, pool, topo, legacy := describetest.Healthy(), describetest.Provisioning(), describetest.RollingUpgrade(), describetest.Pool(), describetest.Topology(), describetest.V1Beta1Only()
	return []goldenCase{
		{"healthy", healthy.Namespace, base(healthy)},
		{"healthy-everything", healthy.Namespace, with(base(healthy), func(o *describe.ClusterRequest) {
			o.ShowConditions, o.Grouping, o.Echo, o.ShowTemplates, o.ShowMachineSets, o.ShowResourceSets = "all", false, true, true, true, true
		})},
		{"provisioning", prov.Namespace, base(prov)},
		{"provisioning-conditions", prov.Namespace, with(base(prov), func(o *describe.ClusterRequest) { o.ShowConditions = "Cluster,dockercluster+" })},
		{"upgrade", up.Namespace, base(up)},
		{"upgrade-machinesets", up.Namespace, with(base(up), func(o *describe.ClusterRequest) {
			o.ShowMachineSets = true
			o.ShowConditions = "Machine/rolling-md-0-old-b+"
		})},
		{"pool", pool.Namespace, base(pool)},
		{"topology", topo.Namespace, base(topo)},
		{"topology-v1beta1-presentation", topo.Namespace, with(base(topo), func(o *describe.ClusterRequest) { o.V1Beta1 = true })},
		{"legacy", legacy.Namespace, base(legacy)},
		{"legacy-v1beta1-presentation", legacy.Namespace, with(base(legacy), func(o *describe.ClusterRequest) { o.V1Beta1, o.ShowConditions = true, "all" })},
	}
}

// snapshotOptions are the options a recorded snapshot is fetched with: everything that changes
// what is read (resource sets) is on, so every presentation can be built from it.
func snapshotOptions(s *describetest.Scenario) describe.ClusterRequest {
	return describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, ShowResourceSets: true}
}

func snapshotPath(name string) string { return filepath.Join("testdata", "snapshots", name+".yaml") }

func loadSnapshot(t *testing.T, name string) *describe.Snapshot {
	t.Helper()
	b, err := os.ReadFile(snapshotPath(name))
	if err != nil {
		t.Fatalf("reading the recorded snapshot (the integration tests record it with -update): %v", err)
	}
	s := &describe.Snapshot{}
	if err := yaml.Unmarshal(b, s); err != nil {
		t.Fatalf("%s: %v", snapshotPath(name), err)
	}
	return s
}

// stableSnapshot is a fetched snapshot as YAML without what changes from one API server to the
// next (uids, resource versions, managed fields, creation and deletion times).
func stableSnapshot(t *testing.T, s *describe.Snapshot) []byte {
	t.Helper()
	each := func(u *unstructured.Unstructured) {
		if u == nil {
			return
		}
		for _, f := range []string{"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation"} {
			unstructured.RemoveNestedField(u.Object, "metadata", f)
		}
		if u.GetDeletionTimestamp() != nil {
			_ = unstructured.SetNestedField(u.Object, describetest.Now.Format("2006-01-02T15:04:05Z"), "metadata", "deletionTimestamp")
		}
	}
	for _, l := range [][]unstructured.Unstructured{s.Machines, s.MachineDeployments, s.MachineSets, s.MachinePools, s.MachineHealthChecks, s.ClusterResourceSets} {
		for i := range l {
			each(&l[i])
		}
	}
	each(s.Cluster)
	each(s.ClusterResourceSetBinding)
	for _, r := range s.Referenced {
		each(r.Object)
	}
	b, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSnapshot compares a fetched snapshot with the recorded one (or records it with -update),
// so that the -short golden tests build from what Fetch really reads.
func checkSnapshot(t *testing.T, name string, s *describe.Snapshot) {
	t.Helper()
	got := stableSnapshot(t, s)
	path := snapshotPath(name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the recorded snapshot (run with -update to record it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Fetch no longer reads what %s records (run `go test ./pkg/describe -update` after checking the difference)\n--- got:\n%s", path, got)
	}
}

func buildAndRender(t *testing.T, s *describe.Snapshot, opts describe.ClusterRequest) []byte {
	t.Helper()
	tree, err := describe.Build(s, opts)
	if err != nil {
		t.Fatalf("build %s/%s: %v", opts.Namespace, opts.Name, err)
	}
	var buf bytes.Buffer
	if err := describe.Render(&buf, tree, describe.RenderOptions{Now: describetest.Now}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestBuildGolden builds every golden tree from its recorded snapshot: no API server needed.
func TestBuildGolden(t *testing.T) {
	if *update {
		t.Skip("-update records snapshots and golden files from the integration tests")
	}
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, buildAndRender(t, loadSnapshot(t, tc.snapshot), tc.opts))
		})
	}
}

// TestBuildRejectsUnknownShowConditionsKind: a --show-conditions kind the tree does not have is
// an error naming the kinds it has (it used to show nothing, silently); known kinds match in any
// case, with or without a name.
func TestBuildRejectsUnknownShowConditionsKind(t *testing.T) {
	s := loadSnapshot(t, describetest.Healthy().Namespace)
	opts := describe.ClusterRequest{Namespace: "healthy", Name: "prod", Grouping: true, ShowConditions: "Cluster,NoSuchKind+"}
	_, err := describe.Build(s, opts)
	var uk *describe.UnknownKindError
	if !errors.As(err, &uk) || uk.Kind != "NoSuchKind" {
		t.Fatalf("want an UnknownKindError for NoSuchKind, got %v", err)
	}
	for _, k := range []string{"Cluster", "DockerCluster", "KubeadmControlPlane", "Machine", "DockerMachine", "KubeadmConfig", "MachineDeployment"} {
		if !strings.Contains(err.Error(), k) {
			t.Errorf("error does not list %s: %v", k, err)
		}
	}
	if strings.Contains(err.Error(), "WorkerGroup") {
		t.Errorf("virtual rows are not kinds: %v", err)
	}
	for _, ok := range []string{"all", "dockermachine+", "Machine/nope", "KubeadmConfig,Cluster"} {
		opts.ShowConditions = ok
		if _, err := describe.Build(s, opts); err != nil {
			t.Errorf("--show-conditions %s: %v", ok, err)
		}
	}
}

// TestBuildIsPure: the same snapshot gives the same tree, and Build does not change it.
func TestBuildIsPure(t *testing.T) {
	s := loadSnapshot(t, describetest.Topology().Namespace)
	before := stableSnapshot(t, s)
	opts := describe.ClusterRequest{Namespace: "topology", Name: "classy", Grouping: true}
	a, b := buildAndRender(t, s, opts), buildAndRender(t, s, opts)
	if !bytes.Equal(a, b) || !bytes.Equal(before, stableSnapshot(t, s)) {
		t.Error("Build is not a pure function of its snapshot")
	}
	if _, err := describe.Build(&describe.Snapshot{}, opts); err == nil {
		t.Error("an empty snapshot builds")
	}
}

// TestSummaryRowFromSnapshots: the fleet row of a v1beta1 cluster reads the v1beta2 counters
// under status.v1beta2 and the version from its control plane; a v1beta2 topology cluster takes
// the topology's version and class. No API server needed.
func TestSummaryRowFromSnapshots(t *testing.T) {
	cpVersion := func(s *describe.Snapshot) string {
		for _, r := range s.Referenced {
			if r.Kind == "KubeadmControlPlane" && r.Object != nil {
				v, _, _ := unstructured.NestedString(r.Object.Object, "spec", "version")
				return v
			}
		}
		return ""
	}
	legacy := loadSnapshot(t, describetest.V1Beta1Only().Namespace)
	row := describe.SummaryRow(legacy.Cluster, cpVersion(legacy))
	if row.Version != "v1.30.4" || row.ControlPlane.String() != "2/3" || row.Workers.String() != "1/1" || row.Available != "True" || row.Reason != "" {
		t.Errorf("v1beta1 cluster row: %+v", row)
	}
	topo := loadSnapshot(t, describetest.Topology().Namespace)
	row = describe.SummaryRow(topo.Cluster, "v0.0.0-not-used")
	if row.Version != "v1.34.1" || row.ClusterClass != "quick-start" || row.Reason != "NotAvailable" {
		t.Errorf("topology cluster row: %+v", row)
	}
}
