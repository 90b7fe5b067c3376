package move

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// ownerShape is an object's owners by kind and name (UIDs differ between clusters).
func ownerShape(o *unstructured.Unstructured) string { return owners(o) }

// TestDirectoryRoundTrip backs a fleet up to a directory and restores it into an empty API
// server: the same graph (kinds, names, specs, owner structure) with new UIDs.
func TestDirectoryRoundTrip(t *testing.T) {
	src, _ := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "backup"
	want := fleet(t, src, ns)
	before := snapshot(t, src.Client, ns)

	dir := filepath.Join(t.TempDir(), "bk")
	rep, err := ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}, BlockMoveTimeout: 3 * time.Second,
		PollInterval: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("the backup did not wait for / fail on the block-move annotation") // fleet's DockerCluster stays blocked
	}
	if !strings.Contains(err.Error(), "DockerCluster/backup/plain") || !strings.Contains(err.Error(), "unchanged and unpaused") {
		t.Errorf("block-move timeout message: %v", err)
	}
	if p := pausedState(t, snapshot(t, src.Client, ns)); len(p) != 1 || p[0] != "Cluster/held" {
		t.Errorf("after a failed backup the source pause state is %v, want only the user's Cluster/held", p)
	}
	// Lift the block and back up for real.
	dc := before["DockerCluster/plain"].DeepCopy()
	if err := mergePatch(ctx, src.Client, dc, map[string]any{"metadata": map[string]any{"annotations": map[string]any{BlockMoveAnnotation: nil}}}); err != nil {
		t.Fatal(err)
	}
	before = snapshot(t, src.Client, ns)
	dir = filepath.Join(t.TempDir(), "bk")
	rep, err = ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}})
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if rep.Objects != want || rep.Written != want {
		t.Errorf("backed up %d objects (%d written), want %d", rep.Objects, rep.Written, want)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != want+1 {
		t.Errorf("%d files for %d objects + manifest", len(entries), want)
	}
	for _, e := range entries {
		if st, _ := e.Info(); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", e.Name(), st.Mode().Perm())
		}
	}
	if after := snapshot(t, src.Client, ns); len(after) != len(before) {
		t.Errorf("the backup changed the source")
	} else if p := pausedState(t, after); len(p) != 1 || p[0] != "Cluster/held" {
		t.Errorf("after the backup the source pause state is %v, want only the user's Cluster/held", p)
	}
	man, _, err := ReadBackup(context.Background(), dir, 0)
	if err != nil || man.Source.ClusterID == "" || man.ToolVersion == "" || len(man.Objects) != want || len(man.Providers) != 4 {
		t.Fatalf("manifest: %+v %v", man, err)
	}

	// Restore into an empty server.
	empty := testenv.Start(t, testenv.Options{CRDPaths: pairCRDs})
	prepareManagementCluster(t, empty)
	rep, err = FromDirectory(ctx, empty.Client, dir, Options{})
	if err != nil {
		t.Fatalf("restore: %v (differences %v)", err, rep.Differences)
	}
	if rep.Created != want {
		t.Errorf("restored %d objects, want %d", rep.Created, want)
	}
	restored := snapshot(t, empty.Client, ns)
	delete(before, "Secret/stray")
	if len(restored) != len(before) {
		t.Errorf("restored %d objects, the source has %d moved ones", len(restored), len(before))
	}
	for k, o := range before {
		r := restored[k]
		if r == nil {
			t.Errorf("%s not restored", k)
			continue
		}
		if r.GetUID() == o.GetUID() {
			t.Errorf("%s kept its UID", k)
		}
		if ownerShape(r) != ownerShape(o) {
			t.Errorf("%s owners: %s, source %s", k, ownerShape(r), ownerShape(o))
		}
	}
	if p := pausedState(t, restored); len(p) != 1 || p[0] != "Cluster/held" {
		t.Errorf("restored pause state %v, want only the user's Cluster/held", p)
	}
	// Restoring again converges (objects adopted, nothing duplicated).
	rep, err = FromDirectory(ctx, empty.Client, dir, Options{})
	if err != nil || rep.AlreadyPresent != want || rep.Created != 0 || rep.Updated != 0 {
		t.Errorf("second restore: created %d updated %d already present %d err %v", rep.Created, rep.Updated, rep.AlreadyPresent, err)
	}

	// A changed file, an extra file, a missing manifest: not a (valid) capctl backup.
	f := filepath.Join(dir, man.Objects[0].File)
	data, _ := os.ReadFile(f)
	if err := os.WriteFile(f, append(data, []byte("# edited\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadBackup(context.Background(), dir, 0); !errors.Is(err, ErrNotBackup) || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("tampered file: %v", err)
	}
	_ = os.WriteFile(f, data, 0o600)
	_ = os.WriteFile(filepath.Join(dir, "extra.yaml"), []byte("a: b\n"), 0o600)
	if _, _, err := ReadBackup(context.Background(), dir, 0); !errors.Is(err, ErrNotBackup) || !strings.Contains(err.Error(), "extra.yaml") {
		t.Errorf("extra file: %v", err)
	}
	other := t.TempDir()
	b, _ := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap"})
	_ = os.WriteFile(filepath.Join(other, ManifestFile), b, 0o600)
	if _, _, err := ReadBackup(context.Background(), other, 0); !errors.Is(err, ErrNotBackup) {
		t.Errorf("foreign manifest: %v", err)
	}
	if _, _, err := ReadBackup(context.Background(), t.TempDir(), 0); !errors.Is(err, ErrNotBackup) {
		t.Errorf("empty directory: %v", err)
	}
	before = snapshot(t, src.Client, ns)
	if _, err := ToDirectory(ctx, src.Client, dir, Options{Scope: Scope{Namespace: ns}}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("backup into a non-empty directory: %v", err)
	}
	// Refused before the pause: not one source object was written (a pause and an unpause
	// would each change its resourceVersion). checkBackupTarget's other refusals are
	// TestBackupTargetRefusals.
	unchanged(t, before, snapshot(t, src.Client, ns))
}

// TestMoveSelectedCluster moves one cluster of a namespace: its subtree moves, the ClusterClass
// it shares with a cluster that stays is copied and stays (unpaused) in the source.
func TestMoveSelectedCluster(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "pick"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addClusterClass("shared")
	one := b.addCluster("one", clusterOpts{class: "shared", cpCount: 1, workers: 1})
	b.addCluster("two", clusterOpts{class: "shared", cpCount: 1, workers: 1})
	before := snapshot(t, src.Client, ns)

	rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns, Clusters: []string{"one"}}})
	if err != nil {
		t.Fatalf("move --cluster one: %v", err)
	}
	if rep.Objects != one+4 || rep.KeptInSource != 4 || rep.Deleted != one || len(rep.Clusters) != 1 {
		t.Errorf("report: objects %d kept %d deleted %d clusters %v; want %d+4 objects, 4 kept", rep.Objects, rep.KeptInSource, rep.Deleted, rep.Clusters, one)
	}
	left := snapshot(t, src.Client, ns)
	if len(left) != len(before)-one {
		t.Errorf("source has %d objects, want %d", len(left), len(before)-one)
	}
	for _, k := range []string{"ClusterClass/shared", "DockerClusterTemplate/shared", "Cluster/two", "Machine/two-cp-0"} {
		if left[k] == nil {
			t.Errorf("%s is gone from the source", k)
		}
	}
	if left["Cluster/one"] != nil || left["Secret/one-kubeconfig"] != nil {
		t.Error("cluster one is still in the source")
	}
	if p := pausedState(t, left); len(p) > 0 {
		t.Errorf("source left paused: %v", p)
	}
	if _, ok := left["ClusterClass/shared"].GetAnnotations()[PausedAnnotation]; ok {
		t.Error("the shared ClusterClass stays paused in the source")
	}
	moved := snapshot(t, dst.Client, ns)
	if len(moved) != one+4 || moved["ClusterClass/shared"] == nil || moved["Cluster/two"] != nil {
		t.Errorf("target: %v", keys(moved))
	}
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns, Clusters: []string{"nope"}}}); !errors.Is(err, ErrNothingToMove) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown cluster: %v", err)
	}

	// The target already holds an object of cluster two: a fresh move refuses to overwrite it.
	clash := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "two-kubeconfig"}, StringData: map[string]string{"value": "someone else's"}}
	if err := dst.Client.Create(ctx, clash); err != nil {
		t.Fatal(err)
	}
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns, Clusters: []string{"two"}}}); err == nil || !strings.Contains(err.Error(), "Secret/pick/two-kubeconfig") {
		t.Errorf("a clash in the target: %v", err)
	}
	if p := pausedState(t, snapshot(t, src.Client, ns)); len(p) > 0 {
		t.Errorf("a refused move paused %v", p)
	}
	if err := dst.Client.Delete(ctx, clash); err != nil {
		t.Fatal(err)
	}
	// Cluster two follows; the ClusterClass copied with cluster one is adopted.
	rep, err = Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns, Clusters: []string{"two"}}})
	if err != nil {
		t.Fatalf("move --cluster two: %v", err)
	}
	if left := snapshot(t, src.Client, ns); len(left) != 4 || left["ClusterClass/shared"] == nil {
		t.Errorf("left in the source: %v", keys(left))
	}
}

// TestMoveKeepsClassSharedWithOtherNamespaces moves a namespace whose ClusterClass a Cluster of
// another namespace uses: the class is copied and stays in the source.
func TestMoveKeepsClassSharedWithOtherNamespaces(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	src.CreateNamespaces(t, "share-a", "share-b")
	a := &builder{tb: t, c: src.Client, ns: "share-a"}
	a.addClusterClass("cc")
	x := a.addCluster("x", clusterOpts{class: "cc", cpCount: 1})
	bb := &builder{tb: t, c: src.Client, ns: "share-b"}
	bb.addCluster("y", clusterOpts{cpCount: 1})
	y := obj(vCore, "Cluster", "y", nil)
	y.SetNamespace("share-b")
	if err := mergePatch(ctx, src.Client, y, map[string]any{"spec": map[string]any{"topology": map[string]any{"classRef": map[string]any{"name": "cc", "namespace": "share-a"}, "version": "v1.34.0"}}}); err != nil {
		t.Fatal(err)
	}
	rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: "share-a"}})
	if err != nil {
		t.Fatalf("move: %v", err)
	}
	if rep.Objects != x+4 || rep.KeptInSource != 4 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "share-b/y") {
		t.Errorf("report: objects %d kept %d warnings %q", rep.Objects, rep.KeptInSource, rep.Warnings)
	}
	left := snapshot(t, src.Client, "share-a")
	if len(left) != 4 || left["ClusterClass/cc"] == nil || left["DockerMachineTemplate/cc-cp"] == nil {
		t.Errorf("left in share-a: %v", keys(left))
	}
	if got := snapshot(t, dst.Client, "share-a"); got["ClusterClass/cc"] == nil || got["Cluster/x"] == nil {
		t.Errorf("target: %v", keys(got))
	}
}
