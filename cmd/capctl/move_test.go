package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/move"
	"github.com/capctl/capctl/pkg/provider"
)

func TestMoveFlagValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"move"}, "--to-kubeconfig"},
		{[]string{"move", "--to-directory", "d", "--to-kubeconfig", "k"}, "cannot be used together"},
		{[]string{"move", "--from-directory", "d", "--to-directory", "e"}, "cannot be used together"},
		{[]string{"move", "--from-directory", "d", "--kubeconfig", "k", "--to-kubeconfig", "t"}, "--kubeconfig"},
		{[]string{"move", "--from-directory", "d"}, "--to-kubeconfig"},
		{[]string{"move", "-A", "-n", "x", "--dry-run"}, "[namespace all-namespaces] are set none of the others can be"},
		{[]string{"move", "--dry-run", "--resume"}, "--resume"},
		{[]string{"move", "--dry-run", "--cluster", "a/b/c"}, "invalid --cluster"},
		{[]string{"move", "--dry-run", "-o", "xml"}, "invalid output format"},
		{[]string{"move", "--kubeconfig", "same.yaml", "--to-kubeconfig", "./same.yaml"}, "source kubeconfig"},
		{[]string{"move", "--to-kubeconfig", "t", "--settle", "-1s"}, "--settle must not be negative"},
		{[]string{"move", "--plan-replacement"}, "--plan-replacement"},
		{[]string{"move", "--plan-replacement", "--to-kubeconfig", "t", "--dry-run"}, "--plan-replacement"},
		{[]string{"move", "--abandon", "--dry-run"}, "--abandon"},
		{[]string{"move", "--abandon", "--resume", "--to-kubeconfig", "t"}, "--abandon"},
		{[]string{"move", "--abandon", "--to-directory", "d"}, "--abandon"},
		{[]string{"move", "--to-kubeconfig", "t", "--parallelism", "0"}, `invalid argument "0" for "--parallelism" flag: must be between 1 and 256`},
		{[]string{"move", "--to-kubeconfig", "t", "--parallelism", "257"}, "must be between 1 and 256"},
	} {
		_, errOut, code := runCapctl(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.args, code, tc.want, errOut)
		}
	}
}

// TestMoveCommand drives `capctl move` against two real API servers: dry run, backup to a
// directory, move, restore of the backup into the emptied source.
func TestMoveCommand(t *testing.T) {
	testenv.Integration(t)
	crds := filepath.Join(testenv.FixturesDir(t), "crds", "cluster.x-k8s.io.yaml")
	src, dst := testenv.StartPair(t, testenv.Options{CRDPaths: []string{crds}})
	ctx := testenv.Context(t)
	for _, env := range []*testenv.Env{src, dst} {
		list := &apiextensionsv1.CustomResourceDefinitionList{}
		if err := env.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			crd := &list.Items[i]
			raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
				inventory.ClusterctlLabel: "", inventory.ProviderLabel: "cluster-api", "cluster.x-k8s.io/v1beta2": "v1beta2"}}})
			if err := env.Client.Patch(ctx, crd, client.RawPatch(types.MergePatchType, raw)); err != nil {
				t.Fatal(err)
			}
		}
		if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
			t.Fatal(err)
		}
		env.CreateNamespaces(t, "capi-system", "team-a")
		if err := inventory.Write(ctx, env.Client, inventory.New("cluster-api", provider.CoreProviderType, "v1.14.2", "capi-system")); err != nil {
			t.Fatal(err)
		}
	}
	c := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
		"metadata": map[string]any{"name": "web", "namespace": "team-a"},
		"spec":     map[string]any{"clusterNetwork": map[string]any{"serviceDomain": "cluster.local"}},
	}}
	if err := src.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"initialization": map[string]any{"infrastructureProvisioned": true}}})
	if err := src.Client.Status().Patch(ctx, c, client.RawPatch(types.MergePatchType, status)); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-kubeconfig", Namespace: "team-a"}, StringData: map[string]string{"value": "TOPSECRET"}}
	if err := src.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCapctl(t, "move", "--kubeconfig", src.Kubeconfig, "-n", "team-a", "--dry-run")
	if code != 0 || !strings.Contains(out, "Dry run: 2 objects") || !strings.Contains(out, "Cluster team-a/web") || !strings.Contains(out, "Secret/team-a/web-kubeconfig") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runCapctl(t, "move", "--kubeconfig", src.Kubeconfig, "-n", "team-a", "--dry-run", "-o", "json")
	var plan map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || plan["objects"].(float64) != 2 {
		t.Fatalf("dry run json: %d %s", code, out)
	}

	dir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code = runCapctl(t, "move", "--kubeconfig", src.Kubeconfig, "-n", "team-a", "--to-directory", dir)
	if code != 0 || !strings.Contains(out, "Wrote 2 objects") {
		t.Fatalf("backup: exit %d\n%s\n%s", code, out, errOut)
	}
	if st, err := os.Stat(filepath.Join(dir, "Secret_team-a_web-kubeconfig.yaml")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", st, err)
	}

	out, errOut, code = runCapctl(t, "move", "--kubeconfig", src.Kubeconfig, "-n", "team-a", "--to-kubeconfig", dst.Kubeconfig, "--settle", "2s")
	if code != 0 || !strings.Contains(out, "Moved 2 objects") || !strings.Contains(out, "Verified") || !strings.Contains(out, "Settled:") {
		t.Fatalf("move: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "TOPSECRET") {
		t.Fatal("Secret data printed")
	}
	got := &corev1.Secret{}
	if err := dst.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web-kubeconfig"}, got); err != nil || string(got.Data["value"]) != "TOPSECRET" {
		t.Fatalf("moved secret: %v", err)
	}
	if err := src.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web-kubeconfig"}, got); err == nil {
		t.Fatal("the secret is still in the source")
	}

	// Restore the backup into the (now empty) source.
	out, errOut, code = runCapctl(t, "move", "--from-directory", dir, "--to-kubeconfig", src.Kubeconfig)
	if code != 0 || !strings.Contains(out, "Restored 2 objects") {
		t.Fatalf("restore: exit %d\n%s\n%s", code, out, errOut)
	}
	restored := &unstructured.Unstructured{}
	restored.SetGroupVersionKind(c.GroupVersionKind())
	if err := src.Client.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, restored); err != nil {
		t.Fatal(err)
	}
	if restored.GetUID() == c.GetUID() {
		t.Error("restored with the old UID")
	}
	if p, _, _ := unstructured.NestedBool(restored.Object, "spec", "paused"); p {
		t.Error("restored cluster still paused")
	}

	// A directory that is not a backup is refused.
	bogus := t.TempDir()
	_ = os.WriteFile(filepath.Join(bogus, "x.yaml"), []byte("kind: Secret\n"), 0o600)
	_, errOut, code = runCapctl(t, "move", "--from-directory", bogus, "--to-kubeconfig", dst.Kubeconfig, "--connect-timeout", (10 * time.Second).String())
	if code == 0 || !strings.Contains(errOut, "not a capctl backup") {
		t.Errorf("bogus directory: %d %s", code, errOut)
	}
	_ = move.ManifestFile
}

// TestMoveOptionsToRequest: the flags become one move.Request (no cluster needed).
func TestMoveOptionsToRequest(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	f := newFactory(io)
	var got *moveOptions
	cmd := newCmdMove(f, func(o *moveOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"-n", "team-a", "--cluster", "team-a/prod", "--to-kubeconfig", "t.kubeconfig", "--resume", "--restart-target", "--parallelism", "8"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	r := got.request
	if r.Settle != move.DefaultSettle || r.NoSettle || r.AcceptConversionLoss || r.PlanReplacement {
		t.Errorf("defaults: settle %s no-settle %v accept %v plan %v", r.Settle, r.NoSettle, r.AcceptConversionLoss, r.PlanReplacement)
	}
	if r.Target == nil || r.Target.Kubeconfig != "t.kubeconfig" || !r.Resume || !r.RestartTarget || r.Parallelism != 8 ||
		r.Scope.Namespace != "team-a" || len(r.Scope.Clusters) != 1 || r.DryRun || r.ToDirectory != "" {
		t.Errorf("request: %+v (target %+v)", r, r.Target)
	}
	cmd = newCmdMove(f, func(o *moveOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--to-kubeconfig", "t", "--no-settle", "--accept-conversion-loss"})
	if err := cmd.Execute(); err != nil || !got.request.NoSettle || !got.request.AcceptConversionLoss {
		t.Errorf("--no-settle --accept-conversion-loss: %v %+v", err, got.request)
	}
	cmd = newCmdMove(f, func(o *moveOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--to-kubeconfig", "t", "--plan-replacement", "-o", "json"})
	if err := cmd.Execute(); err != nil || !got.request.PlanReplacement {
		t.Errorf("--plan-replacement: %v %+v", err, got.request)
	}
	cmd = newCmdMove(f, func(o *moveOptions) error { return nil })
	cmd.SetArgs([]string{"--restart-target", "--to-kubeconfig", "t"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("--restart-target without --resume: %v", err)
	}
}
