package move

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(faultChildEnv) != "" {
		os.Exit(runFaultChild())
	}
	if os.Getenv("MOVE_TEST_LOG") != "" {
		ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	testenv.Main(m)
}

// snapshot lists the moved kinds in ns: "Kind/name" -> object.
func snapshot(t testing.TB, c *cluster.Client, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	typesToList, err := DiscoverTypes(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := listAll(ctx, c, typesToList, []string{ns}, nil, allFieldOwners)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range objs {
		o := &objs[i]
		if o.GetKind() == "ConfigMap" && o.GetName() == "kube-root-ca.crt" {
			continue
		}
		out[o.GetKind()+"/"+o.GetName()] = o
	}
	return out
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fleet writes the test fleet into ns: a plain cluster with a block-move annotation on its infra
// cluster, a ClusterClass cluster, a cluster its user paused, a move-hierarchy ConfigMap owning a
// Secret, and a stray Secret labelled with a cluster name but linked with nothing.
func fleet(t *testing.T, env *testenv.Env, ns string) int {
	t.Helper()
	env.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: env.Client, ns: ns}
	n := b.addCluster("plain", clusterOpts{cpCount: 1, workers: 2, annotate: map[string]string{BlockMoveAnnotation: ""}})
	n += b.addClusterClass("quick-start")
	n += b.addCluster("classy", clusterOpts{class: "quick-start", cpCount: 1, workers: 1})
	n += b.addCluster("held", clusterOpts{cpCount: 1, paused: true})
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cloud-config", "labels": map[string]any{MoveHierarchyLabel: ""}}, "data": map[string]any{"a": "b"}}}
	cm = b.create(cm)
	// A GitOps tool owns a field of it through server-side apply.
	applied := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cloud-config","namespace":"` + ns + `"},"data":{"from-git":"yes"}}`)
	if err := env.Client.Patch(context.Background(), cm, client.RawPatch(types.ApplyPatchType, applied), client.FieldOwner("gitops"), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
	b.create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "cloud-credentials"}, "stringData": map[string]any{"token": "SECRETVALUE"}}}, cm)
	n += 2
	// A ClusterResourceSet with its resource (soft-owned by name) and a binding to cluster plain.
	crs := b.create(obj("addons.cluster.x-k8s.io/v1beta2", "ClusterResourceSet", "crs", map[string]any{
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"cni": "calico"}},
		"resources":       []any{map[string]any{"kind": "ConfigMap", "name": "addons"}},
	}))
	b.create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "addons"}, "data": map[string]any{"calico.yaml": "kind: List"}}})
	b.create(obj("addons.cluster.x-k8s.io/v1beta2", "ClusterResourceSetBinding", "plain", map[string]any{"clusterName": "plain"}), crs)
	n += 3
	b.create(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "stray", "labels": map[string]any{"cluster.x-k8s.io/cluster-name": "plain"}}, "stringData": map[string]any{"x": "y"}}})
	return n
}

func TestMoveFleetBetweenTwoAPIServers(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "fleet"
	want := fleet(t, src, ns)
	before := snapshot(t, src.Client, ns)

	// Dry run: the graph and the order, no write.
	g, err := Plan(ctx, src.Client, Scope{Namespace: ns})
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if g.Count() != want {
		t.Errorf("dry run plans %d objects, the fleet has %d", g.Count(), want)
	}
	level := map[string]int{}
	cluster := map[string]string{}
	for _, n := range g.Moved() {
		level[n.Ref.Kind+"/"+n.Ref.Name] = n.Level
		cluster[n.Ref.Kind+"/"+n.Ref.Name] = n.Cluster
	}
	for _, pair := range [][2]string{
		{"Cluster/plain", "DockerCluster/plain"}, {"KubeadmControlPlane/plain", "Machine/plain-cp-0"},
		{"Machine/plain-cp-0", "KubeadmConfig/plain-cp-0"}, {"MachineDeployment/plain-md-0", "MachineSet/plain-md-0-abcde"},
		{"Cluster/plain", "Secret/plain-kubeconfig"}, {"ClusterClass/quick-start", "Cluster/classy"},
		{"ClusterClass/quick-start", "DockerClusterTemplate/quick-start"}, {"ConfigMap/cloud-config", "Secret/cloud-credentials"},
		{"ClusterResourceSet/crs", "ConfigMap/addons"}, {"ClusterResourceSet/crs", "ClusterResourceSetBinding/plain"},
		{"Cluster/plain", "ClusterResourceSetBinding/plain"},
	} {
		if level[pair[0]] >= level[pair[1]] {
			t.Errorf("%s (level %d) must come before %s (level %d)", pair[0], level[pair[0]], pair[1], level[pair[1]])
		}
	}
	if cluster["Secret/plain-kubeconfig"] != ns+"/plain" || cluster["DockerMachine/plain-md-0-abcde-1"] != ns+"/plain" || cluster["ClusterResourceSetBinding/plain"] != ns+"/plain" {
		t.Errorf("objects not grouped under their cluster: %v", cluster)
	}
	if len(g.Excluded) != 1 || g.Excluded[0].Object.Name != "stray" || !strings.Contains(g.Excluded[0].Reason, MoveLabel) {
		t.Errorf("exclusions = %+v, want the stray Secret with a hint", g.Excluded)
	}
	if after := snapshot(t, src.Client, ns); len(after) != len(before) {
		t.Fatalf("the dry run changed the source")
	}
	if got := snapshot(t, dst.Client, ns); len(got) != 0 {
		t.Fatalf("the dry run wrote to the target: %v", keys(got))
	}

	// Lift the block-move annotation once the move says it waits for it.
	waiting := make(chan struct{})
	lifted := make(chan struct{})
	go func() {
		defer close(lifted)
		select {
		case <-waiting:
		case <-time.After(2 * time.Minute): // the test's own clock: how long it lets the move take to start waiting
			t.Error("the move never waited for the block-move annotation")
			return
		}
		time.Sleep(500 * time.Millisecond) // a few polls see it still there
		dc := &unstructured.Unstructured{}
		dc.SetGroupVersionKind(g.Nodes[findUID(g, "DockerCluster", "plain")].Obj.GroupVersionKind())
		dc.SetNamespace(ns)
		dc.SetName("plain")
		if err := mergePatch(context.Background(), src.Client, dc, map[string]any{"metadata": map[string]any{"annotations": map[string]any{BlockMoveAnnotation: nil}}}); err != nil {
			t.Errorf("lifting block-move: %v", err)
		}
	}()
	var progress []int
	logw := &watchWriter{match: "Move blocked by", hit: waiting}
	rep, err := Move(ctx, src.Client, dst.Client, Options{
		Scope: Scope{Namespace: ns}, PollInterval: 200 * time.Millisecond, BlockMoveTimeout: time.Minute,
		Log: logging.New(logw, 0),
		Progress: func(phase string, done, total int) {
			if phase == "create" {
				progress = append(progress, done)
			}
		},
	})
	<-lifted
	if !strings.Contains(logw.String(), "Every block-move annotation is gone") {
		t.Errorf("the wait did not end by the annotation going away:\n%s", logw.String())
	}
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if rep.Objects != want || rep.Created != want || rep.Deleted != want || len(rep.Differences) != 0 {
		t.Errorf("report: objects %d created %d deleted %d diffs %v; want %d", rep.Objects, rep.Created, rep.Deleted, rep.Differences, want)
	}
	if len(progress) != want {
		t.Errorf("progress reported %d times for %d objects", len(progress), want)
	}
	if len(rep.UserPaused) != 1 || !strings.Contains(rep.UserPaused[0], "held") {
		t.Errorf("user-paused = %v", rep.UserPaused)
	}

	// Source: only the stray Secret (and nothing moved) is left; no journal.
	left := snapshot(t, src.Client, ns)
	if _, ok := left["Secret/stray"]; !ok || len(left) != 1 {
		t.Errorf("left in the source: %v", keys(left))
	}
	// Target: everything else, with owner references pointing at target UIDs, no status, and
	// the pause lifted except where the user had set it.
	moved := snapshot(t, dst.Client, ns)
	for k := range before {
		if _, ok := moved[k]; !ok && k != "Secret/stray" {
			t.Errorf("%s missing in the target", k)
		}
	}
	targetUIDs := map[types.UID]bool{}
	for _, o := range moved {
		targetUIDs[o.GetUID()] = true
	}
	for k, o := range moved {
		for _, r := range o.GetOwnerReferences() {
			if !targetUIDs[r.UID] {
				t.Errorf("%s has an owner reference to %s %s with a UID that is not in the target", k, r.Kind, r.Name)
			}
		}
		if _, ok := o.GetAnnotations()[MovePausedAnnotation]; ok {
			t.Errorf("%s still carries %s", k, MovePausedAnnotation)
		}
	}
	if p, _, _ := unstructured.NestedBool(moved["Cluster/plain"].Object, "spec", "paused"); p {
		t.Error("Cluster plain is still paused in the target")
	}
	if p, _, _ := unstructured.NestedBool(moved["Cluster/held"].Object, "spec", "paused"); !p {
		t.Error("Cluster held, paused by its user, was unpaused")
	}
	if _, ok := moved["ClusterClass/quick-start"].GetAnnotations()[PausedAnnotation]; ok {
		t.Error("ClusterClass quick-start is still paused in the target")
	}
	if _, ok := moved["Machine/plain-cp-0"].Object["status"]; ok {
		t.Error("status was copied")
	}
	if got := moved["Secret/plain-kubeconfig"]; got == nil || string(mustB64(t, got, "value")) != "kubeconfig-of-plain-SECRETVALUE" {
		t.Error("the kubeconfig Secret did not arrive intact")
	}
	gitops := false
	for _, e := range moved["ConfigMap/cloud-config"].GetManagedFields() {
		gitops = gitops || (e.Manager == "gitops" && e.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !gitops {
		t.Errorf("the server-side apply owner of ConfigMap cloud-config was lost: %+v", moved["ConfigMap/cloud-config"].GetManagedFields())
	}
	cm := &corev1.ConfigMap{}
	if err := src.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: JournalName}, cm); !apierrors.IsNotFound(err) {
		t.Errorf("the journal is still there after a complete move: %v", err)
	}

	// A second run finds nothing and says so.
	_, err = Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
	if !errors.Is(err, ErrNothingToMove) || !strings.Contains(err.Error(), ns) {
		t.Errorf("an empty move: %v", err)
	}
}

func mustB64(t *testing.T, o *unstructured.Unstructured, k string) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := runtimeFromUnstructured(o, s); err != nil {
		t.Fatal(err)
	}
	return s.Data[k]
}

func findUID(g *Graph, kind, name string) types.UID {
	for u, n := range g.Nodes {
		if n.Ref.Kind == kind && n.Ref.Name == name {
			return u
		}
	}
	return ""
}

func TestMoveRefusals(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	src.CreateNamespaces(t, "empty")

	if _, err := Move(ctx, src.Client, src.Client, Options{Scope: Scope{Namespace: "empty"}}); !errors.Is(err, ErrSameCluster) {
		t.Errorf("moving a cluster onto itself: %v", err)
	}
	// The same cluster through a second client (another kubeconfig) is refused too.
	again, err := cluster.New(cluster.Options{Kubeconfig: src.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Move(ctx, src.Client, again, Options{Scope: Scope{Namespace: "empty"}}); !errors.Is(err, ErrSameCluster) {
		t.Errorf("moving a cluster onto itself: %v", err)
	}
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: "no-such-ns"}}); !errors.Is(err, ErrNamespaceNotFound) || !strings.Contains(err.Error(), "no-such-ns") {
		t.Errorf("missing namespace: %v", err)
	}
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: "empty"}}); !errors.Is(err, ErrNothingToMove) {
		t.Errorf("empty namespace: %v", err)
	}
	// -v 5 logs every API request (through Run, which connects the clusters).
	var vlog strings.Builder
	fl := Flags{Source: cluster.Options{Kubeconfig: src.Kubeconfig}, DryRun: true,
		Options: Options{Scope: Scope{Namespace: "empty"}, Log: logging.New(&vlog, 5)}}
	req, err := fl.Request()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, fl.Connections(), req)
	if !errors.Is(err, ErrNothingToMove) || !strings.Contains(vlog.String(), `API request cluster="source" method="GET"`) {
		t.Errorf("-v 5 dry run: %v\n%s", err, vlog.String())
	}
	// A backup of an empty namespace fails and leaves no folder behind.
	emptyDir := filepath.Join(t.TempDir(), "bk")
	if _, err := ToDirectory(ctx, src.Client, emptyDir, Options{Scope: Scope{Namespace: "empty"}}); !errors.Is(err, ErrNothingToMove) {
		t.Errorf("backup of an empty namespace: %v", err)
	}
	if _, err := os.Stat(emptyDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a backup of an empty namespace left %s behind (%v)", emptyDir, err)
	}
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: "empty"}, Resume: true}); err == nil || !strings.Contains(err.Error(), "nothing to resume") {
		t.Errorf("--resume without a journal: %v", err)
	}
	// A target without the source's providers, or with older ones, is named.
	problems := compareProviders(defaultProviders("v1.14.2"), defaultProviders("v1.13.5")[:3])
	if len(problems) != 4 || !strings.Contains(strings.Join(problems, "\n"), "infrastructure-docker") || !strings.Contains(problems[0], "older") {
		t.Errorf("provider problems: %q", problems)
	}
}

// watchWriter collects log lines and closes hit when a line contains match.
type watchWriter struct {
	mu    sync.Mutex
	buf   strings.Builder
	match string
	hit   chan struct{}
	done  bool
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(string(p), w.match) {
		w.done = true
		close(w.hit)
	}
	return len(p), nil
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
