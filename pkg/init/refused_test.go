package clusterinit_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	clusterinit "github.com/capctl/capctl/pkg/init"
)

// writeBrokenProviders adds to the config at cfgPath two local providers: "badyaml", whose
// components are not YAML, and "oddkind", whose last object has a kind nothing defines.
func writeBrokenProviders(t *testing.T, cfgPath string) {
	t.Helper()
	repo := t.TempDir()
	meta := "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- major: 0\n  minor: 1\n  contract: v1beta2\n"
	files := map[string]string{
		"infrastructure-badyaml/v0.1.0/metadata.yaml":                  meta,
		"infrastructure-badyaml/v0.1.0/infrastructure-components.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: badyaml-system\n   labels: {}\n",
		"infrastructure-oddkind/v0.1.0/metadata.yaml":                  meta,
		"infrastructure-oddkind/v0.1.0/infrastructure-components.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: oddkind-system\n---\napiVersion: example.com/v1\nkind: Frobnicator\nmetadata:\n  name: f\n  namespace: oddkind-system\n",
	}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []string{"badyaml", "oddkind"} {
		if _, err := f.WriteString("- name: " + n + "\n  type: InfrastructureProvider\n  url: " + filepath.Join(repo, "infrastructure-"+n, "v0.1.0", "infrastructure-components.yaml") + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRefusedInitChangesNothing: an init refused for a permission the user lacks (every missing
// one named, with a ClusterRole granting it), an unknown provider, a missing version, a
// components file that is not YAML, an unknown kind in the last provider or a cert-manager that
// cannot be fetched creates nothing on the API server (not even the inventory CRD), and names
// every problem of the request at once.
func TestRefusedInitChangesNothing(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	writeBrokenProviders(t, cfgPath)
	env := testenv.Start(t, testenv.Options{})
	ctx := testenv.Context(t)
	// An operator who may do everything but create Deployments (cert-manager's kinds, not served
	// yet, and the inventory's, granted by group).
	env.GrantAllBut(t, "no-deployments", map[string][]string{"deployments.apps": {"create"}})
	if err := env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-unserved-groups"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"cert-manager.io", "clusterctl.cluster.x-k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}); err != nil {
		t.Fatal(err)
	}
	env.Bind(t, "no-deployments", "test-unserved-groups")
	operator := env.User(t, "no-deployments").Config
	before := testenv.Snapshot(t, env.Client)
	v := "cluster-api:v1.14.0"
	for _, tc := range []struct {
		name string
		sel  clusterinit.Selection
		cfg  string
		as   *rest.Config
		want []string
	}{
		{name: "a permission missing", sel: clusterinit.Selection{Core: v}, as: operator,
			want: []string{"missing permissions", "create deployments.apps cluster-wide", "kind: ClusterRole", "nothing was changed", "capctl auth can-i init"}},
		{name: "unknown provider", sel: clusterinit.Selection{Core: v, Infrastructure: []string{"nosuch"}}, want: []string{`"nosuch"`}},
		{name: "missing version", sel: clusterinit.Selection{Core: "cluster-api:v9.9.9"}, want: []string{"v9.9.9"}},
		{name: "components not YAML", sel: clusterinit.Selection{Core: v, Infrastructure: []string{"badyaml:v0.1.0"}}, want: []string{"badyaml", "line 5"}},
		{name: "all at once", sel: clusterinit.Selection{Core: "cluster-api:v9.9.9", Infrastructure: []string{"nosuch", "badyaml:v0.1.0"}}, want: []string{"v9.9.9", `"nosuch"`, "badyaml"}},
		{name: "unknown kind in the last provider", sel: clusterinit.Selection{Core: v, Infrastructure: []string{"tiny:v0.1.0", "oddkind:v0.1.0"}}, want: []string{"Frobnicator"}},
		{name: "cert-manager cannot be fetched", sel: clusterinit.Selection{Core: v}, cfg: "nocm", want: []string{"cert-manager"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := cfgPath
			if tc.cfg == "nocm" {
				b, _ := os.ReadFile(cfgPath)
				body := strings.Replace(string(b), "cert-manager-crds.yaml", "no-such-cert-manager.yaml", 1)
				path = filepath.Join(t.TempDir(), "clusterctl.yaml")
				if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			as := env.Config
			if tc.as != nil {
				as = tc.as
			}
			_, err := clusterinit.InitWith(ctx, clients(t, path, as), clusterinit.InitRequest{StrictChecks: true, Selection: tc.sel})
			if err == nil {
				t.Fatal("init was not refused")
			}
			var perr *authz.PreflightError
			if errors.As(err, &perr) != (tc.as != nil) {
				t.Fatalf("a permission refusal is expected exactly for the operator; got %v", err)
			}
			if perr != nil {
				want := []authz.Permission{{Group: "apps", Resource: "deployments", Verb: "create"}}
				if got := perr.Missing(); !reflect.DeepEqual(got, want) {
					t.Errorf("missing permissions: got %v, want %v", got, want)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			testenv.Unchanged(t, env.Client, before, "a refused init")
		})
	}
}
