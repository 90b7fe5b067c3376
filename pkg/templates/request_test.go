package templates

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/variables"
)

func testConfig(t *testing.T, body string, env map[string]string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(context.Background(), config.Options{Path: p, LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func kubeconfigWithNamespace(t *testing.T, ns string) cluster.Options {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	body := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: "` + ns + `"}}]
current-context: x
`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cluster.Options{Kubeconfig: p}
}

func i64(v int64) *int64 { return &v }

// TestResolvePrecedence: flags win, then the environment, then the config file; the built-ins
// are what the lookup gives generation.
func TestResolvePrecedence(t *testing.T) {
	cfgBody := "CONTROL_PLANE_MACHINE_COUNT: \"3\"\nWORKER_MACHINE_COUNT: \"4\"\nKUBERNETES_VERSION: v1.33.0\n"
	cases := []struct {
		name          string
		req           ClusterRequest
		env           map[string]string
		cp, workers   int64
		version, ns   string
		nsFrom        string
		needs, checks bool
	}{
		{"config file", ClusterRequest{Name: "c1", Source: Source{Infrastructure: "docker"}}, nil, 3, 4, "v1.33.0", "from-kc", NamespaceFromKubeconfig, false, true},
		{"environment over config", ClusterRequest{Name: "c1", Source: Source{Infrastructure: "docker"}},
			map[string]string{"CONTROL_PLANE_MACHINE_COUNT": "5", "KUBERNETES_VERSION": "v1.34.0"}, 5, 4, "v1.34.0", "from-kc", NamespaceFromKubeconfig, false, true},
		{"flags over all", ClusterRequest{Name: "c1", Source: Source{From: "t.yaml"}, ControlPlaneMachineCount: i64(1), WorkerMachineCount: i64(0),
			KubernetesVersion: "v1.35.0", TargetNamespace: "ns1"}, map[string]string{"CONTROL_PLANE_MACHINE_COUNT": "5"}, 1, 0, "v1.35.0", "ns1", NamespaceFromFlag, false, false},
		{"config map needs the cluster", ClusterRequest{Name: "c1", Source: Source{ConfigMap: "cm"}}, nil, 3, 4, "v1.33.0", "from-kc", NamespaceFromKubeconfig, true, true},
		{"default infrastructure needs the cluster", ClusterRequest{Name: "c1"}, nil, 3, 4, "v1.33.0", "from-kc", NamespaceFromKubeconfig, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Kubeconfig = kubeconfigWithNamespace(t, "from-kc")
			res, err := c.req.Resolve(testConfig(t, cfgBody, c.env))
			if err != nil {
				t.Fatal(err)
			}
			if res.ControlPlaneMachineCount != c.cp || res.WorkerMachineCount != c.workers || res.KubernetesVersion != c.version ||
				res.Namespace != c.ns || res.NamespaceFrom != c.nsFrom || res.NeedsCluster != c.needs || res.ConsultsCluster != c.checks {
				t.Errorf("resolved %+v", res)
			}
			for name, want := range map[string]string{VarControlPlaneMachineCount: itoa(c.cp), VarWorkerMachineCount: itoa(c.workers), VarKubernetesVersion: c.version, VarNamespace: c.ns, VarClusterName: "c1"} {
				if got, _ := res.Lookup(name); got != want {
					t.Errorf("lookup %s = %q, want %q", name, got, want)
				}
			}
			if c.req.Source.ConfigMap != "" && res.ConfigMapNamespace != "from-kc" {
				t.Errorf("config map namespace %q", res.ConfigMapNamespace)
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestListingShowsResolvedValues: --list-variables shows the values Resolve gives generation.
func TestListingShowsResolvedValues(t *testing.T) {
	req := &ClusterRequest{Name: "c1", Source: Source{From: "t.yaml"}}
	cfg := testConfig(t, "CONTROL_PLANE_MACHINE_COUNT: \"3\"\nKUBERNETES_VERSION: v1.33.0\n", nil)
	req.Kubeconfig = cluster.Options{Kubeconfig: filepath.Join(t.TempDir(), "none")}
	res, err := req.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	vars := []variables.Variable{
		{Name: VarKubernetesVersion, Required: true}, {Name: VarControlPlaneMachineCount, Required: true},
		{Name: VarNamespace, Required: true}, {Name: "POD_CIDR", Default: "10.0.0.0/8"}, {Name: "OTHER", Required: true},
	}
	l := listVariables(vars, req, res)
	if strings.Join(l.Required, ",") != "OTHER" {
		t.Errorf("required %v", l.Required)
	}
	got := map[string]string{}
	for _, o := range l.Optional {
		got[o.Name] = o.Default
	}
	want := map[string]string{VarKubernetesVersion: "v1.33.0", VarControlPlaneMachineCount: "3", VarNamespace: "default (" + NamespaceFromDefault + ")", "POD_CIDR": `"10.0.0.0/8"`}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s defaults to %q, want %q", k, got[k], v)
		}
	}
}

func TestResolveRejectsBadValues(t *testing.T) {
	none := cluster.Options{Kubeconfig: filepath.Join(t.TempDir(), "none")}
	req := ClusterRequest{Name: "c1", Source: Source{From: "t.yaml"}, Kubeconfig: none}
	if _, err := req.Resolve(testConfig(t, "CONTROL_PLANE_MACHINE_COUNT: zero\n", nil)); err == nil || !strings.Contains(err.Error(), `invalid CONTROL_PLANE_MACHINE_COUNT "zero" from the environment or config`) {
		t.Errorf("bad count from config: %v", err)
	}
	values := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(values, []byte("NAMESPACE: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	req = ClusterRequest{Name: "c1", Source: Source{From: "t.yaml"}, Kubeconfig: none, Values: Values{File: values}}
	if _, err := req.Resolve(nil); !IsInputError(err) || !strings.Contains(err.Error(), "NAMESPACE is set by --target-namespace") {
		t.Errorf("built-in in --values: %v", err)
	}
	req = ClusterRequest{Name: "Bad_Name", Source: Source{From: "t.yaml"}}
	if err := req.Validate(); !IsInputError(err) {
		t.Errorf("bad name: %v", err)
	}
}
