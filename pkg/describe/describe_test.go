package describe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// env is the one API server of this package (started in TestMain, shared by every test).
var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

var (
	setupOnce sync.Once
	setupOK   bool
)

// setup installs the Cluster API CRDs and creates every scenario, once for the package.
func setup(t testing.TB) {
	t.Helper()
	testenv.Integration(t)
	testenv.FixturesDir(t) // skips, saying why, without the fixtures
	setupOnce.Do(func() {
		ctx := context.Background()
		describetest.InstallCRDs(t, env)
		var objs []*unstructured.Unstructured
		for _, s := range describetest.All() {
			env.CreateNamespaces(t, s.Namespace)
			objs = append(objs, s.Objects...)
		}
		describetest.Apply(ctx, t, env.Client, objs)
		setupOK = !t.Failed()
	})
	if !setupOK {
		t.Fatal("setting up the scenarios failed (see the first test that ran)")
	}
}

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v\ngot:\n%s", err, got)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run `go test ./pkg/describe -run %s -update` after checking it by eye)\n--- got:\n%s\n--- want:\n%s", path, t.Name(), got, want)
	}
}

func render(t *testing.T, c describe.Reader, opts describe.ClusterRequest) []byte {
	t.Helper()
	tree, err := describe.Discover(context.Background(), c, opts)
	if err != nil {
		t.Fatalf("describe %s/%s: %v", opts.Namespace, opts.Name, err)
	}
	var buf bytes.Buffer
	if err := describe.Render(&buf, tree, describe.RenderOptions{Now: describetest.Now}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDescribeGolden fetches every scenario from the API server: the snapshot must be the
// recorded one (which TestBuildGolden builds under -short), and the tree the golden one.
func TestDescribeGolden(t *testing.T) {
	setup(t)
	for _, s := range []*describetest.Scenario{describetest.Healthy(), describetest.Provisioning(), describetest.RollingUpgrade(), describetest.Pool(), describetest.Topology()} {
		t.Run("snapshot-"+s.Namespace, func(t *testing.T) {
			snap, err := describe.Fetch(context.Background(), env.Client, snapshotOptions(s))
			if err != nil {
				t.Fatal(err)
			}
			checkSnapshot(t, s.Namespace, snap)
		})
	}
	for _, tc := range goldenCases() {
		if strings.HasPrefix(tc.name, "legacy") {
			continue // TestDescribeV1Beta1Only: another API server
		}
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, render(t, env.Client, tc.opts))
		})
	}
}

// TestDescribeV1Beta1Only runs against a second API server that serves Cluster API at v1beta1
// only (a management cluster on the old contract).
func TestDescribeV1Beta1Only(t *testing.T) {
	testenv.Integration(t)
	old := testenv.Start(t, testenv.Options{CRDPaths: []string{describetest.V1Beta1CRDs()}})
	s := describetest.V1Beta1Only()
	old.CreateNamespaces(t, s.Namespace)
	describetest.Apply(context.Background(), t, old.Client, s.Objects)

	opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true}
	tree, err := describe.Discover(context.Background(), old.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if tree.ServedVersion != "v1beta1" {
		t.Errorf("served version %q, want v1beta1", tree.ServedVersion)
	}
	snap, err := describe.Fetch(context.Background(), old.Client, snapshotOptions(s))
	if err != nil {
		t.Fatal(err)
	}
	checkSnapshot(t, s.Namespace, snap)
	checkGolden(t, "legacy", render(t, old.Client, opts))
	opts.V1Beta1, opts.ShowConditions = true, "all"
	checkGolden(t, "legacy-v1beta1-presentation", render(t, old.Client, opts))

	// The fleet summary reads the v1beta2 counters under status.v1beta2 and the version from the
	// v1beta1 control plane.
	rows, err := describe.Summarize(context.Background(), old.Client, describe.SummaryRequest{AllNamespaces: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Version != "v1.30.4" || rows[0].ControlPlane.String() != "2/3" || rows[0].Workers.String() != "1/1" || rows[0].Available != "True" {
		t.Errorf("summary of the v1beta1 cluster: %+v", rows)
	}
}

func TestDescribeAsData(t *testing.T) {
	setup(t)
	s := describetest.Provisioning()
	tree, err := describe.Discover(context.Background(), env.Client, describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "DockerCluster provisioning/stuck Ready=False (LoadBalancerProvisioningFailed)"; tree.Root.FirstFailing != want {
		t.Errorf("first failing %q, want %q", tree.Root.FirstFailing, want)
	}
	var buf bytes.Buffer
	if err := output.WriteStructured(&buf, output.JSON, tree); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Cluster struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Conditions []struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"conditions"`
			Children []struct {
				Kind string `json:"kind"`
				Role string `json:"role"`
			} `json:"children"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, buf.String())
	}
	if back.Cluster.Kind != "Cluster" || back.Cluster.Name != "stuck" || len(back.Cluster.Children) != 3 {
		t.Errorf("unexpected tree: %+v", back.Cluster)
	}
	if !strings.Contains(back.Cluster.Conditions[0].Message, "\n* ControlPlaneAvailable") {
		t.Errorf("multi-line message not kept intact: %q", back.Cluster.Conditions[0].Message)
	}
	buf.Reset()
	if err := output.WriteStructured(&buf, output.YAML, tree); err != nil || !strings.Contains(buf.String(), "firstFailing: DockerCluster provisioning/stuck") {
		t.Errorf("YAML: %v\n%s", err, buf.String())
	}
}

func TestDescribeBadInput(t *testing.T) {
	setup(t)
	ctx := context.Background()
	_, err := describe.Discover(ctx, env.Client, describe.ClusterRequest{Namespace: "healthy", Name: "nope"})
	var nf *cluster.ClusterNotFoundError
	if !errors.As(err, &nf) || len(nf.Existing) != 1 || nf.Existing[0] != "prod" || !strings.Contains(err.Error(), "clusters there: prod") {
		t.Errorf("cluster not found: %v", err)
	}
	_, err = describe.Discover(ctx, env.Client, describe.ClusterRequest{Namespace: "no-such-namespace", Name: "prod"})
	var nsErr *describe.NamespaceNotFoundError
	if !errors.As(err, &nsErr) {
		t.Errorf("namespace not found: %v", err)
	}
	if _, err := describe.Summarize(ctx, env.Client, describe.SummaryRequest{Namespace: "no-such-namespace"}); !errors.As(err, &nsErr) {
		t.Errorf("summary of a missing namespace: %v", err)
	}
	rows, err := describe.Summarize(ctx, env.Client, describe.SummaryRequest{Namespace: "topology"})
	if err != nil || len(rows) != 1 || rows[0].Version != "v1.34.1" || rows[0].ClusterClass != "quick-start" || rows[0].Reason != "NotAvailable" {
		t.Errorf("summary of the topology namespace: %v %+v", err, rows)
	}
	// Broken references show as missing rows (the golden file shows them); the tree still builds.
	s := describetest.Topology()
	tree, err := describe.Discover(ctx, env.Client, describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true})
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(n *describe.Node)
	walk = func(n *describe.Node) {
		if n.Missing {
			missing = append(missing, n.Kind+": "+n.Error)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree.Root)
	if len(missing) != 2 || !strings.Contains(strings.Join(missing, "\n"), "FooConfig: kind FooConfig.bootstrap.example.com is not served") {
		t.Errorf("missing rows: %q", missing)
	}
}

// TestWatchRedrawsOnChange changes a condition while watching and expects a second frame.
func TestWatchRedrawsOnChange(t *testing.T) {
	setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := describetest.Pool().InNamespace("watch")
	s.Create(ctx, t, env)
	opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true}
	frames := make(chan string, 10)
	frame := func(ctx context.Context) ([]byte, error) {
		tree, err := describe.Discover(ctx, env.Client, opts)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		err = describe.Render(&buf, tree, describe.RenderOptions{Now: describetest.Now})
		return buf.Bytes(), err
	}
	w := &frameWriter{frames: frames}
	done := make(chan error, 1)
	go func() { done <- output.Watch(ctx, 50*time.Millisecond, w, false, frame) }()
	first := waitFrame(t, frames)
	if !strings.Contains(first, "ScalingUp") {
		t.Fatalf("first frame lacks the pool's state:\n%s", first)
	}
	dmp := s.Object("DockerMachinePool", "pooled-mp-0").DeepCopy()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"","lastTransitionTime":%q}]}}`, describetest.Now.Format(time.RFC3339))
	if err := env.Client.Status().Patch(ctx, dmp, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	second := waitFrame(t, frames)
	if strings.Contains(second, "ScalingUp") || !strings.HasPrefix(second, "\n") {
		t.Errorf("second frame should show the change, after a blank line:\n%s", second)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watch ended with %v, want nil on cancel", err)
	}
}

type frameWriter struct{ frames chan string }

func (w *frameWriter) Write(p []byte) (int, error) {
	if string(p) == "\n" { // the separator comes in its own write; attach it to the next frame
		w.frames <- "\n"
		return 1, nil
	}
	w.frames <- string(p)
	return len(p), nil
}

func waitFrame(t *testing.T, frames chan string) string {
	t.Helper()
	var s string
	for {
		select {
		case f := <-frames:
			s += f
			if f != "\n" {
				return s
			}
		case <-time.After(30 * time.Second): // the test's own clock: a frame that never comes fails the test instead of hanging it
			t.Fatal("no frame within 30s")
		}
	}
}

// TestGroupedFetchReadsVisibleMachinesOnly: in the grouped view Fetch reads the infrastructure
// and bootstrap objects of the machines that stay rows only, and the tree is the one built from a
// full snapshot.
func TestGroupedFetchReadsVisibleMachinesOnly(t *testing.T) {
	setup(t)
	ctx := context.Background()
	s := describetest.Large("grouped-fetch", 3, 150)
	env.CreateNamespaces(t, s.Namespace)
	describetest.Apply(ctx, t, env.Client, s.Objects)
	opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true}

	full, err := describe.Fetch(ctx, env.Client, describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster})
	if err != nil {
		t.Fatal(err)
	}
	grouped, err := describe.Fetch(ctx, env.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Machines) != 153 || len(grouped.Machines) != 153 {
		t.Fatalf("machines: full %d, grouped %d", len(full.Machines), len(grouped.Machines))
	}
	if len(full.Referenced) != 2+2*153 {
		t.Errorf("full snapshot: %d referenced objects, want %d", len(full.Referenced), 2+2*153)
	}
	if len(grouped.Referenced) >= 2+2*20 {
		t.Errorf("grouped snapshot: %d referenced objects; grouping should leave few machines visible", len(grouped.Referenced))
	}
	var want, got bytes.Buffer
	for _, x := range []struct {
		s   *describe.Snapshot
		out *bytes.Buffer
	}{{full, &want}, {grouped, &got}} {
		tree, err := describe.Build(x.s, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := describe.Render(x.out, tree, describe.RenderOptions{Now: describetest.Now}); err != nil {
			t.Fatal(err)
		}
	}
	if want.String() != got.String() {
		t.Errorf("grouped fetch renders\n%s\nthe full snapshot renders\n%s", got.String(), want.String())
	}
}

// TestDescribePartialView: a user who may not list Machines gets the tree of everything else,
// with the Machines' kind named under it and in the data (a partial view: exit code 3 in cmd);
// before, the describe stopped at the forbidden list and showed nothing. The admin's tree is
// complete and says nothing of it.
func TestDescribePartialView(t *testing.T) {
	setup(t)
	s := describetest.Healthy()
	opts := describe.ClusterRequest{Namespace: s.Namespace, Name: s.Cluster, Grouping: true}
	env.GrantAllBut(t, "no-machine-list", map[string][]string{"machines.cluster.x-k8s.io": {"list"}})
	user := env.User(t, "no-machine-list")

	full, err := describe.Discover(context.Background(), env.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if full.Partial() {
		t.Fatalf("the admin's view is partial: %v", full.Unread)
	}
	if bytes.Contains(render(t, env.Client, opts), []byte("Partial view")) {
		t.Error("the admin's tree says it is partial")
	}

	tree, err := describe.Discover(context.Background(), user, opts)
	if err != nil {
		t.Fatalf("describe stopped over one unreadable kind: %v", err)
	}
	if !tree.Partial() || len(tree.Unread) != 1 || tree.Unread[0].Resource != "machines.cluster.x-k8s.io" || tree.Unread[0].Verb != "list" || !tree.Unread[0].Forbidden {
		t.Fatalf("unread: %+v", tree.Unread)
	}
	var machines, rows int
	var walk func(n *describe.Node)
	walk = func(n *describe.Node) {
		rows++
		if n.Category == describe.CategoryMachine {
			machines++
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(tree.Root)
	if machines != 0 || rows < 3 {
		t.Errorf("partial tree: %d rows, %d machines (want the cluster, its infrastructure and control plane, no machine)", rows, machines)
	}
	text := string(render(t, user, opts))
	for _, want := range []string{"Cluster " + s.Namespace + "/" + s.Cluster, "Partial view: 1 kind(s) could not be read", "machines.cluster.x-k8s.io"} {
		if !strings.Contains(text, want) {
			t.Errorf("the partial tree lacks %q:\n%s", want, text)
		}
	}
	var buf bytes.Buffer
	if err := output.Render(&buf, output.JSON, tree, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"unread"`) {
		t.Errorf("the JSON view does not name the unread kind:\n%s", buf.String())
	}
}
