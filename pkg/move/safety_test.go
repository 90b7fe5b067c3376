package move

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
)

// TestDiffObjectSeesFinalizersAndAnnotations: the verification compares everything a move must
// carry over, and nothing but capctl's own pause is forgiven.
func TestDiffObjectSeesFinalizersAndAnnotations(t *testing.T) {
	c := unitObj(unitTypes[0].GVK, "c")
	c.SetFinalizers([]string{"cluster.cluster.x-k8s.io"})
	c.SetAnnotations(map[string]string{"team": "a"})
	_ = unstructured.SetNestedField(c.Object, "10.0.0.0/8", "spec", "clusterNetwork", "cidr")
	n := &Node{Obj: c, Ref: Ref{APIVersion: "cluster.x-k8s.io/v1beta2", Kind: "Cluster", Namespace: "ns", Name: "c"}}

	same := c.DeepCopy()
	same.SetAnnotations(map[string]string{"team": "a", MovePausedAnnotation: "move-x"})
	_ = unstructured.SetNestedField(same.Object, true, "spec", "paused")
	if d := diffObject(c, same, n); len(d) != 0 {
		t.Errorf("capctl's pause counted as a difference: %v", d)
	}
	for name, damage := range map[string]func(*unstructured.Unstructured){
		"finalizers": func(u *unstructured.Unstructured) { u.SetFinalizers(nil) },
		"annotations": func(u *unstructured.Unstructured) {
			u.SetAnnotations(map[string]string{"team": "a", DeleteForMoveAnnotation: ""})
		},
		"labels": func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) },
		"spec": func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "x", "spec", "clusterNetwork", "cidr")
		},
		"owners": func(u *unstructured.Unstructured) {
			u.SetOwnerReferences(unitObj(unitTypes[1].GVK, "m", c).GetOwnerReferences())
		},
	} {
		got := c.DeepCopy()
		damage(got)
		d := diffObject(c, got, n)
		if len(d) != 1 || !strings.HasPrefix(d[0], name) {
			t.Errorf("%s damage: %v", name, d)
		}
	}
}

// TestSanitizeStripsLeftovers: what an interrupted run left on source objects never reaches the
// target copy.
func TestSanitizeStripsLeftovers(t *testing.T) {
	c := unitObj(unitTypes[0].GVK, "c")
	c.SetAnnotations(map[string]string{MovePausedAnnotation: "move-old", DeleteForMoveAnnotation: "", "keep": "me"})
	_ = unstructured.SetNestedField(c.Object, true, "spec", "paused")
	g, err := BuildGraph([]unstructured.Unstructured{*c}, unitTypes, Scope{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	w := sanitize(g)
	n := g.Moved()[0]
	if len(w) != 1 || !strings.Contains(w[0], DeleteForMoveAnnotation) {
		t.Errorf("warnings: %v", w)
	}
	if a := n.Obj.GetAnnotations(); len(a) != 1 || a["keep"] != "me" {
		t.Errorf("annotations after sanitize: %v", a)
	}
	if _, ok, _ := unstructured.NestedFieldNoCopy(n.Obj.Object, "spec", "paused"); ok || !n.pausedByUs || n.UserPaused {
		t.Errorf("pause: field kept %v, pausedByUs %v, user %v", ok, n.pausedByUs, n.UserPaused)
	}
}

// TestAllNamespacesClusterNameMustBeUnique: -A --cluster NAME refuses a name used in two
// namespaces and accepts NAMESPACE/NAME.
func TestAllNamespacesClusterNameMustBeUnique(t *testing.T) {
	a := unitObj(unitTypes[0].GVK, "prod")
	b := unitObj(unitTypes[0].GVK, "prod")
	b.SetNamespace("other")
	b.SetUID("other-prod")
	objs := []unstructured.Unstructured{*a, *b}
	_, err := BuildGraph(objs, unitTypes, Scope{AllNamespaces: true, Clusters: []string{"prod"}})
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), "other/prod") || !strings.Contains(err.Error(), "ns/prod") {
		t.Errorf("ambiguous name: %v", err)
	}
	g, err := BuildGraph(objs, unitTypes, Scope{AllNamespaces: true, Clusters: []string{"other/prod"}})
	if err != nil || g.Count() != 1 || g.Moved()[0].Ref.Namespace != "other" {
		t.Errorf("NAMESPACE/NAME: %v", err)
	}
}

func TestScopeResolveAndRequestValidate(t *testing.T) {
	s := Scope{Clusters: []string{"team/a", "b"}}.resolve(&cluster.Client{Namespace: "team"})
	if s.Namespace != "team" || s.Clusters[0] != "a" || s.Clusters[1] != "b" {
		t.Errorf("resolve: %+v", s)
	}
	if s := (Scope{AllNamespaces: true, Clusters: []string{"team/a"}}).resolve(&cluster.Client{Namespace: "x"}); s.Namespace != "" || s.Clusters[0] != "team/a" {
		t.Errorf("resolve -A: %+v", s)
	}
	target := &cluster.Options{Kubeconfig: "t"}
	for _, tc := range []struct {
		req  Flags
		want string
	}{
		{Flags{}, "--to-kubeconfig"},
		{Flags{Target: target, Options: Options{RestartTarget: true}}, "with --resume"},
		{Flags{DryRun: true, Options: Options{Resume: true}}, "--resume"},
		{Flags{Target: target, ToDirectory: "d"}, "cannot be used together"},
		{Flags{Source: cluster.Options{Kubeconfig: "k"}, Target: target, FromDirectory: "d"}, "--kubeconfig (the source) cannot be used with it"},
		{Flags{Source: cluster.Options{Kubeconfig: "./t"}, Target: target}, "is the source kubeconfig"},
		{Flags{DryRun: true, Options: Options{Scope: Scope{Namespace: "a", Clusters: []string{"b/c"}}}}, "not in namespace"},
		{Flags{Target: target, Options: Options{Scope: Scope{Namespace: "Team_A"}}}, `invalid namespace "Team_A"`},
	} {
		if err := tc.req.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.req, err, tc.want)
		}
	}
	if err := (Flags{Target: target, Options: Options{Resume: true, RestartTarget: true}}).Validate(); err != nil {
		t.Errorf("--resume --restart-target: %v", err)
	}
	// The same file in another context is another cluster.
	if err := (Flags{Source: cluster.Options{Kubeconfig: "t", Context: "a"}, Target: target}).Validate(); err != nil {
		t.Errorf("same kubeconfig, other context: %v", err)
	}
	// The flags pick one mode request each; a mode request checks its own fields alone, with the
	// words the command uses, so a library caller gets the command's answer.
	for _, tc := range []struct {
		flags Flags
		want  string
	}{
		{Flags{Target: target}, "*move.MoveRequest"},
		{Flags{DryRun: true}, "*move.DryRunRequest"},
		{Flags{DryRun: true, Target: target}, "*move.DryRunRequest"},
		{Flags{ToDirectory: "d"}, "*move.BackupRequest"},
		{Flags{FromDirectory: "d", Target: target}, "*move.RestoreRequest"},
		{Flags{FromDirectory: "d", DryRun: true}, "*move.RestoreRequest"},
		{Flags{Abandon: true}, "*move.AbandonRequest"},
		{Flags{PlanReplacement: true, Target: target}, "*move.ReplacementRequest"},
	} {
		req, err := tc.flags.Request()
		if err != nil || fmt.Sprintf("%T", req) != tc.want {
			t.Errorf("%+v: %T, %v; want %s", tc.flags, req, err, tc.want)
		}
	}
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{&DryRunRequest{Options{Scope: Scope{Namespace: "Team_A"}}}, `invalid namespace "Team_A"`},
		{&MoveRequest{Options: Options{RestartTarget: true}}, "use it with --resume"},
		{&BackupRequest{Options: Options{Resume: true}, Directory: "d"}, "--resume and --restart-target finish a move"},
		{&BackupRequest{}, "pass --to-directory"},
		{&RestoreRequest{Directory: "d", Options: Options{Scope: Scope{AllNamespaces: true}}}, "restores the whole backup"},
		{&AbandonRequest{Options{Resume: true}}, "--abandon undoes an unfinished move"},
		{&ReplacementRequest{Options{Parallelism: MaxParallelism + 1}}, "--parallelism must be between"},
	} {
		if err := tc.req.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%T %+v: %v, want %q", tc.req, tc.req, err, tc.want)
		}
		if _, err := Run(context.Background(), env.Env{}, tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run %T: %v, want the refusal %q before anything is reached", tc.req, err, tc.want)
		}
	}
}

// TestSnapshotRoundTrip: the journal's copy spans several Secrets and comes back identical;
// a changed chunk is refused.
func TestSnapshotRoundTrip(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(cluster.Scheme()).Build()
	ctx := context.Background()
	var objs []unstructured.Unstructured
	root := unitObj(unitTypes[0].GVK, "c")
	root.SetFinalizers([]string{"cluster.cluster.x-k8s.io"})
	objs = append(objs, *root)
	for i := range 300 {
		s := unitObj(unitTypes[5].GVK, "cm-"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26)), root)
		// Incompressible data so the copy needs more than one Secret.
		s.Object["data"] = map[string]any{"v": randomText(4096, i)}
		objs = append(objs, *s)
	}
	g, err := BuildGraph(objs, unitTypes, Scope{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	j := &journal{MoveID: "move-test", Scope: Scope{Namespace: "ns"}, namespace: "ns"}
	if err := writeSnapshot(ctx, c, j, g); err != nil {
		t.Fatal(err)
	}
	if j.DataSecrets < 2 {
		t.Errorf("the copy fits %d Secret(s); the test wants several", j.DataSecrets)
	}
	back, err := readSnapshot(ctx, c, j)
	if err != nil {
		t.Fatal(err)
	}
	if back.Count() != g.Count() || len(back.Order) != len(g.Order) {
		t.Fatalf("read back %d objects in %d levels, wrote %d in %d", back.Count(), len(back.Order), g.Count(), len(g.Order))
	}
	for u, n := range g.Nodes {
		if n.Level < 0 {
			continue
		}
		b := back.Nodes[u]
		if b == nil || len(diffObject(n.Obj, b.Obj, n)) != 0 || b.Level != n.Level || len(b.Owners) != len(n.Owners) {
			t.Fatalf("%s did not come back identical", n.Ref)
		}
	}
	j.DataSHA256 = strings.Repeat("0", 64)
	if _, err := readSnapshot(ctx, c, j); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Errorf("a damaged copy: %v", err)
	}
}

func randomText(n, seed int) string {
	b := make([]byte, n)
	x := uint32(seed*2654435761 + 1)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
	}
	return string(b)
}

// TestSnapshotGzipBombIsRefused: a journal copy whose digest matches but whose gzip expands past
// the bound is refused once the bound is read, not decompressed to the end; one that is not
// JSON at all is refused at its first byte.
func TestSnapshotGzipBombIsRefused(t *testing.T) {
	defer func(old int64) { maxJournalObjects = old }(maxJournalObjects)
	maxJournalObjects = 1 << 20
	// One object whose string never ends: valid JSON as far as it goes, 8 MiB of it.
	bomb := append([]byte(`[{"object":{"apiVersion":"v1","kind":"ConfigMap","data":{"x":"`), bytes.Repeat([]byte("a"), 8<<20)...)
	err := readBomb(t, bomb)
	if err == nil || !strings.Contains(err.Error(), "expands past 1Mi") || !strings.Contains(err.Error(), "ns/"+JournalName) {
		t.Fatalf("a gzip bomb in the journal: %v, want a refusal naming the Secrets and the bound", err)
	}
	if err := readBomb(t, make([]byte, 8<<20)); err == nil || !strings.Contains(err.Error(), "decoding the journal's copy") {
		t.Fatalf("8 MiB of zeros in the journal: %v, want a refusal", err)
	}
}

func readBomb(t *testing.T, content []byte) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	c := fake.NewClientBuilder().WithScheme(cluster.Scheme()).WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: JournalName + "-0"},
		Data:       map[string][]byte{"objects.json.gz": buf.Bytes()},
	}).Build()
	j := &journal{MoveID: "move-test", Scope: Scope{Namespace: "ns"}, namespace: "ns", DataSecrets: 1, DataSHA256: hex.EncodeToString(sum[:])}
	_, err := readSnapshot(context.Background(), c, j)
	return err
}
