package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/templates"
)

// TestGenerateClusterFlagsToOptions parses flags into the request without any cluster, config
// or repository.
func TestGenerateClusterFlagsToOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *generateClusterOptions
	cmd := newCmdGenerateCluster(newFactory(io), func(o *generateClusterOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"c1", "-i", "docker:v1.14.0", "-f", "development", "--kubernetes-version", "v1.34.1",
		"--control-plane-machine-count", "3", "-n", "team-a", "--set", "A=1", "--values", "v.yaml", "-o", "json", "--write-to", "out.json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	r := got.Request
	if r.Name != "c1" || r.Source.Infrastructure != "docker:v1.14.0" || r.Source.Flavor != "development" || r.KubernetesVersion != "v1.34.1" ||
		r.ControlPlaneMachineCount == nil || *r.ControlPlaneMachineCount != 3 || r.WorkerMachineCount != nil || r.TargetNamespace != "team-a" ||
		!reflect.DeepEqual(r.Values, templates.Values{Set: []string{"A=1"}, File: "v.yaml"}) || got.Output != "json" || got.WriteTo != "out.json" {
		t.Errorf("options %+v, request %+v", got, r)
	}
	// Without the count flags the request leaves them to the environment and config.
	cmd = newCmdGenerateCluster(newFactory(io), func(o *generateClusterOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"c1", "--from", "t.yaml", "--list-variables"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Request.ControlPlaneMachineCount != nil || got.Request.WorkerMachineCount != nil || !got.Request.ListVariables || got.Request.Source.From != "t.yaml" {
		t.Errorf("request %+v", got.Request)
	}
	// Bad input is refused before the run.
	cmd = newCmdGenerateCluster(newFactory(io), func(*generateClusterOptions) error { t.Error("run called"); return nil })
	cmd.SetArgs([]string{"c1", "--from", "t.yaml", "--worker-machine-count", "-1"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "invalid --worker-machine-count -1") {
		t.Errorf("bad count: %v", err)
	}
}

func TestGenerateYAMLFlagsToOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *generateYAMLOptions
	cmd := newCmdGenerateYAML(newFactory(io), func(o *generateYAMLOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--from", "t.yaml", "--set", "A=1", "--list-variables"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Request.From != "t.yaml" || !got.Request.ListVariables || !reflect.DeepEqual(got.Request.Values.Set, []string{"A=1"}) || got.Output != "text" {
		t.Errorf("options %+v", got)
	}
}

// TestGenerateClusterRunWithOwnClients runs the command's run(Options) with the test's own
// config and clients: the config file's machine count and the kubeconfig's namespace reach the
// output, and the management cluster is not needed for --from.
func TestGenerateClusterRunWithOwnClients(t *testing.T) {
	io, in, out, errOut := iostreams.Test()
	in.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${CLUSTER_NAME}\ndata:\n  workers: \"${WORKER_MACHINE_COUNT}\"\n")
	dir := t.TempDir()
	cfgPath, kc := filepath.Join(dir, "clusterctl.yaml"), filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cfgPath, []byte("WORKER_MACHINE_COUNT: \"2\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: from-kc}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(context.Background(), config.Options{Path: cfgPath, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	o := &generateClusterOptions{
		deps: deps{
			IO:     io,
			Config: func(context.Context) (*config.Config, error) { return cfg, nil },
			Logger: func() *logging.Logger { return logging.New(errOut, 0) },
			Cluster: func(context.Context) (*cluster.Client, error) {
				t.Error("the cluster was contacted")
				return nil, errors.New("none")
			},
		},
		Kubeconfig: func() cluster.Options { return cluster.Options{Kubeconfig: kc} },
		Request:    templates.ClusterRequest{Name: "c1", Source: templates.Source{From: "-"}},
		Output:     output.Text,
	}
	if err := runGenerateCluster(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if want := "apiVersion: v1\ndata:\n  workers: \"2\"\nkind: ConfigMap\nmetadata:\n  name: c1\n  namespace: from-kc\n"; out.String() != want || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}
