package move

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/userinput"
)

type crafted struct {
	file string
	obj  map[string]any
}

func craftedObj(apiVersion, kind, ns, name, uid string) map[string]any {
	md := map[string]any{"name": name, "uid": uid}
	if ns != "" {
		md["namespace"] = ns
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

// writeCrafted writes a backup whose manifest lists every file with a matching checksum, as an
// attacker able to write the folder would.
func writeCrafted(t *testing.T, objs []crafted) string {
	t.Helper()
	dir := t.TempDir()
	man := Manifest{APIVersion: ManifestAPIVersion, Kind: ManifestKind, Scope: Scope{Namespace: "team-a"}}
	for _, c := range objs {
		b, err := yaml.Marshal(c.obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, c.file), b, 0o600); err != nil {
			t.Fatal(err)
		}
		md := c.obj["metadata"].(map[string]any)
		ns, _ := md["namespace"].(string)
		sum := sha256.Sum256(b)
		man.Objects = append(man.Objects, ManifestObject{File: c.file, SHA256: hex.EncodeToString(sum[:]),
			Ref: Ref{APIVersion: c.obj["apiVersion"].(string), Kind: c.obj["kind"].(string), Namespace: ns, Name: md["name"].(string), UID: types.UID(md["uid"].(string))}})
	}
	b, _ := yaml.Marshal(man)
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

var restoreTypes = []TypeInfo{
	{GVK: schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "Cluster"}, Namespaced: true, ForceMove: true, ForceMoveHierarchy: true},
	{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespaced: true},
	{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true},
}

var legit = []crafted{
	{"Cluster_team-a_c1.yaml", craftedObj("cluster.x-k8s.io/v1beta2", "Cluster", "team-a", "c1", "u1")},
	{"Secret_team-a_c1-kubeconfig.yaml", craftedObj("v1", "Secret", "team-a", "c1-kubeconfig", "u2")},
}

// TestCraftedBackups: every crafted backup is refused before anything reaches a cluster (the
// read and the check take no client), naming the file and why; the genuine one passes.
func TestCraftedBackups(t *testing.T) {
	adminBinding := craftedObj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "pwn", "u9")
	adminBinding["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}
	adminBinding["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "team-a"}}
	for _, tc := range []struct {
		name  string
		extra []crafted
		want  string
	}{
		{"cluster-admin binding", []crafted{{"ClusterRoleBinding__pwn.yaml", adminBinding}}, "ClusterRoleBinding__pwn.yaml: ClusterRoleBinding.rbac.authorization.k8s.io pwn is not a kind a move copies"},
		{"workload in kube-system", []crafted{{"Deployment_kube-system_x.yaml", craftedObj("apps/v1", "Deployment", "kube-system", "x", "u9")}}, "Deployment_kube-system_x.yaml: Deployment.apps kube-system/x is not a kind a move copies"},
		{"Secret outside the namespace", []crafted{{"Secret_kube-system_c1-kubeconfig.yaml", craftedObj("v1", "Secret", "kube-system", "c1-kubeconfig", "u9")}}, "Secret_kube-system_c1-kubeconfig.yaml: Secret kube-system/c1-kubeconfig is outside the backup's namespace team-a"},
		{"Cluster outside the namespace", []crafted{{"Cluster_other_c2.yaml", craftedObj("cluster.x-k8s.io/v1beta2", "Cluster", "other", "c2", "u9")}}, "Cluster_other_c2.yaml: Cluster.cluster.x-k8s.io other/c2 is outside the backup's namespace team-a"},
		{"unrelated Secret", []crafted{{"Secret_team-a_loot.yaml", craftedObj("v1", "Secret", "team-a", "loot", "u9")}}, "Secret_team-a_loot.yaml: Secret team-a/loot: not linked with any Cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeCrafted(t, append(append([]crafted{}, legit...), tc.extra...))
			man, g, err := ReadBackup(context.Background(), dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			err = restorableProblems(man, g, restoreTypes, nil)
			if !errors.Is(err, ErrRefusedObjects) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was written") {
				t.Fatalf("got %v\nwant %q", err, tc.want)
			}
		})
	}
	dir := writeCrafted(t, legit)
	man, g, err := ReadBackup(context.Background(), dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := restorableProblems(man, g, restoreTypes, nil); err != nil {
		t.Fatalf("the genuine backup was refused: %v", err)
	}
}

// TestCraftedBackupFiles: special files, duplicates and oversized files are refused by the read
// itself, without following, opening for a blocking read, or reading past the bounds.
func TestCraftedBackupFiles(t *testing.T) {
	ctx := context.Background()
	read := func(dir string, total int64) error { _, _, err := ReadBackup(ctx, dir, total); return err }

	t.Run("symlink", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		secret := filepath.Join(t.TempDir(), "outside.yaml")
		b, _ := os.ReadFile(filepath.Join(dir, legit[1].file))
		_ = os.WriteFile(secret, b, 0o600)
		_ = os.Remove(filepath.Join(dir, legit[1].file))
		if err := os.Symlink(secret, filepath.Join(dir, legit[1].file)); err != nil {
			t.Fatal(err)
		}
		if err := read(dir, 0); err == nil || !strings.Contains(err.Error(), legit[1].file+": a symbolic link") {
			t.Fatalf("symlink: %v", err)
		}
	})
	t.Run("FIFO", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		_ = os.Remove(filepath.Join(dir, legit[1].file))
		if err := syscall.Mkfifo(filepath.Join(dir, legit[1].file), 0o600); err != nil {
			t.Skip(err)
		}
		if err := read(dir, 0); err == nil || !strings.Contains(err.Error(), legit[1].file+": a FIFO") {
			t.Fatalf("FIFO: %v", err)
		}
	})
	t.Run("device", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		p := filepath.Join(dir, legit[1].file)
		_ = os.Remove(p)
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|5); err != nil { // /dev/zero's numbers
			t.Skipf("mknod: %v", err)
		}
		if err := read(dir, 0); err == nil || !strings.Contains(err.Error(), legit[1].file+": a device") {
			t.Fatalf("device: %v", err)
		}
	})
	t.Run("duplicate entry", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		mp := filepath.Join(dir, ManifestFile)
		b, _ := os.ReadFile(mp)
		man := Manifest{}
		_ = yaml.Unmarshal(b, &man)
		man.Objects = append(man.Objects, man.Objects[1])
		b, _ = yaml.Marshal(man)
		_ = os.WriteFile(mp, b, 0o600)
		if err := read(dir, 0); err == nil || !strings.Contains(err.Error(), legit[1].file+": listed more than once") {
			t.Fatalf("duplicate: %v", err)
		}
	})
	t.Run("oversized file", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		old := userinput.SetMax(64)
		defer userinput.SetMax(old)
		if err := read(dir, 0); err == nil || !strings.Contains(err.Error(), "--max-input-size") {
			t.Fatalf("oversized file: %v", err)
		}
	})
	t.Run("oversized backup", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		if err := read(dir, 400); err == nil || !strings.Contains(err.Error(), MaxBackupSizeFlag) {
			t.Fatalf("oversized backup: %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		dir := writeCrafted(t, legit)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := ReadBackup(cctx, dir, 0); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
	})
}

// TestCraftedRestoreChangesNothing: on a real API server, a crafted backup (a cluster-admin
// binding beside genuine objects) is refused and the target is unchanged: the same objects at
// the same resourceVersions.
func TestCraftedRestoreChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
	_, dst := sharedPair(t)
	ctx := testenv.Context(t)
	adminBinding := craftedObj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "pwn", "u9")
	adminBinding["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"}
	adminBinding["subjects"] = []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "team-a"}}
	dir := writeCrafted(t, append(append([]crafted{}, legit...), crafted{"ClusterRoleBinding__pwn.yaml", adminBinding},
		crafted{"Secret_kube-system_c1-kubeconfig.yaml", craftedObj("v1", "Secret", "kube-system", "c1-kubeconfig", "u8")}))
	state := func() map[string]string {
		out := map[string]string{}
		for _, gvk := range []schema.GroupVersionKind{
			{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBindingList"},
			{Version: "v1", Kind: "SecretList"}, {Version: "v1", Kind: "NamespaceList"},
			{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterList"},
		} {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk)
			if err := dst.Client.List(ctx, l); err != nil {
				t.Fatal(err)
			}
			for _, o := range l.Items {
				out[gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
			}
		}
		return out
	}
	before := state()
	_, err := FromDirectory(ctx, dst.Client, dir, Options{})
	if !errors.Is(err, ErrRefusedObjects) || !strings.Contains(err.Error(), "ClusterRoleBinding__pwn.yaml") || !strings.Contains(err.Error(), "Secret_kube-system_c1-kubeconfig.yaml") {
		t.Fatalf("crafted restore: %v", err)
	}
	if after := state(); !reflect.DeepEqual(before, after) {
		t.Fatalf("the refused restore changed the target:\nbefore %v\nafter  %v", before, after)
	}
}

// TestRestoreAcceptsSharedClassOfAnotherNamespace: a namespace's backup holds the ClusterClass
// its Cluster uses from another namespace, with its template (a move copies them along), and
// the restore accepts them; a class of that namespace no Cluster of the backup uses is refused.
func TestRestoreAcceptsSharedClassOfAnotherNamespace(t *testing.T) {
	types := append([]TypeInfo{
		{GVK: schema.GroupVersionKind{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClass"}, Namespaced: true, ForceMove: true, ForceMoveHierarchy: true},
		{GVK: schema.GroupVersionKind{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DockerClusterTemplate"}, Namespaced: true},
	}, restoreTypes...)
	cl := craftedObj("cluster.x-k8s.io/v1beta2", "Cluster", "team-a", "c1", "u1")
	cl["spec"] = map[string]any{"topology": map[string]any{"classRef": map[string]any{"name": "shared", "namespace": "classes"}, "version": "v1.34.0"}}
	cc := craftedObj("cluster.x-k8s.io/v1beta2", "ClusterClass", "classes", "shared", "u3")
	cc["spec"] = map[string]any{"infrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": vInfra, "kind": "DockerClusterTemplate", "name": "shared"}}}
	files := []crafted{
		{"Cluster_team-a_c1.yaml", cl},
		{"Secret_team-a_c1-kubeconfig.yaml", craftedObj("v1", "Secret", "team-a", "c1-kubeconfig", "u2")},
		{"ClusterClass_classes_shared.yaml", cc},
		{"DockerClusterTemplate_classes_shared.yaml", craftedObj(vInfra, "DockerClusterTemplate", "classes", "shared", "u4")},
	}
	check := func(files []crafted) error {
		man, g, err := ReadBackup(context.Background(), writeCrafted(t, files), 0)
		if err != nil {
			t.Fatal(err)
		}
		return restorableProblems(man, g, types, nil)
	}
	if err := check(files); err != nil {
		t.Fatalf("the backup with the shared class was refused: %v", err)
	}
	other := crafted{"ClusterClass_classes_other.yaml", craftedObj("cluster.x-k8s.io/v1beta2", "ClusterClass", "classes", "other", "u5")}
	if err := check(append(files, other)); !errors.Is(err, ErrRefusedObjects) || !strings.Contains(err.Error(), "classes/other is outside the backup's namespace team-a") {
		t.Fatalf("a class no Cluster uses: %v", err)
	}
}

// TestRestoreRefusesFieldsTheTargetDrops: a backup whose Cluster holds a field the target's
// Cluster schema does not have (taken where a newer provider's CRD had it) is refused before its
// first object is written, naming the object and the field: a plain create would drop the field
// and the verification would then fail on every re-run.
func TestRestoreRefusesFieldsTheTargetDrops(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs a real API server")
	}
	_, dst := sharedPair(t)
	ctx := testenv.Context(t)
	cl := craftedObj("cluster.x-k8s.io/v1beta2", "Cluster", "team-drop", "c1", "u1")
	cl["spec"] = map[string]any{"paused": false, "futureField": "from a newer provider"}
	cl["status"] = map[string]any{"initialization": map[string]any{"infrastructureProvisioned": true}}
	sec := craftedObj("v1", "Secret", "team-drop", "c1-kubeconfig", "u2")
	dir := writeCrafted(t, []crafted{{"Cluster_team-drop_c1.yaml", cl}, {"Secret_team-drop_c1-kubeconfig.yaml", sec}})
	rewriteScope(t, dir, "team-drop")
	_, err := FromDirectory(ctx, dst.Client, dir, Options{})
	if !errors.Is(err, ErrSchemaDrops) || !strings.Contains(err.Error(), `unknown field "spec.futureField"`) || !strings.Contains(err.Error(), "Cluster/team-drop/c1") ||
		!strings.Contains(err.Error(), "Nothing of the backup was written") {
		t.Fatalf("restore with a field the target drops: %v", err)
	}
	for _, gvk := range []schema.GroupVersionKind{{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterList"}, {Version: "v1", Kind: "SecretList"}} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk)
		if err := dst.Client.List(ctx, l, client.InNamespace("team-drop")); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 0 {
			t.Errorf("the refused restore wrote %d %s", len(l.Items), gvk.Kind)
		}
	}
}

// rewriteScope sets the crafted backup's namespace (writeCrafted writes team-a).
func rewriteScope(t *testing.T, dir, ns string) {
	t.Helper()
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	man := &Manifest{}
	if err := yaml.Unmarshal(b, man); err != nil {
		t.Fatal(err)
	}
	man.Scope.Namespace = ns
	out, _ := yaml.Marshal(man)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
