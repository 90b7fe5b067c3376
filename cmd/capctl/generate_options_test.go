package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/iostreams"
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
