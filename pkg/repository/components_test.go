package repository

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/pkg/provider"
	"github.com/capctl/capctl/pkg/variables"
)

// TestDockerComponentsAsClusterctl checks `generate provider --infrastructure docker:v1.14.0` facts
// derived from clusterctl v1.14's pipeline (spec §4) on the real fixture YAML.
func TestDockerComponentsAsClusterctl(t *testing.T) {
	cfg := fixtureConfig(t, "images:\n  infrastructure-docker:\n    tag: v1.14.0-mirror\n")
	c := newTestClient(t, cfg, Options{Offline: true})
	docker, _ := c.Provider("docker", provider.InfrastructureProviderType)
	comp, err := c.Components(context.Background(), docker, ComponentsOptions{Version: "v1.14.0", Lookup: variables.FromMap(map[string]string{"EXP_MACHINE_POOL": "false"})})
	if err != nil {
		t.Fatal(err)
	}
	if comp.Version != "v1.14.0" || comp.Contract != "v1beta2" || comp.TargetNamespace != "capd-system" || comp.File != "infrastructure-components.yaml" {
		t.Errorf("release facts: %s %s %s %s", comp.Version, comp.Contract, comp.TargetNamespace, comp.File)
	}
	raw := readFixtureObjects(t, "infrastructure-docker/v1.14.0/infrastructure-components.yaml")
	if len(comp.Objects) != len(raw) {
		t.Errorf("%d objects, the file has %d", len(comp.Objects), len(raw))
	}
	// Same kinds and names as the file, no object added or dropped.
	want, got := map[string]int{}, map[string]int{}
	for _, o := range raw {
		want[o.GetKind()+"/"+o.GetName()]++
	}
	for _, o := range comp.Objects {
		got[o.GetKind()+"/"+o.GetName()]++
	}
	if !reflect.DeepEqual(want, got) {
		t.Errorf("kinds/names differ:\nwant %v\ngot  %v", want, got)
	}
	// Order: Namespace, cert-manager objects (Certificate, Issuer as in the file), then file order.
	var order []string
	for _, o := range comp.Objects[:4] {
		order = append(order, o.GetKind())
	}
	if strings.Join(order, ",") != "Namespace,Certificate,Issuer,CustomResourceDefinition" {
		t.Errorf("install order starts %v", order)
	}
	for _, o := range comp.Objects {
		l := o.GetLabels()
		if v, ok := l["clusterctl.cluster.x-k8s.io"]; !ok || v != "" || l["cluster.x-k8s.io/provider"] != "infrastructure-docker" {
			t.Errorf("%s/%s labels %v", o.GetKind(), o.GetName(), l)
		}
		if IsNamespaced(o.GetKind()) && o.GetNamespace() != "capd-system" {
			t.Errorf("%s/%s namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	// Substituted values: defaults, a value from the lookup, the quoted empty default.
	dep := find(comp.Objects, "Deployment", "capd-controller-manager")
	if dep == nil {
		t.Fatal("no capd-controller-manager Deployment")
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	mgr := cs[0].(map[string]any)
	args := strings.Join(toStrings(mgr["args"]), " ")
	for _, w := range []string{"--diagnostics-address=:8443", "--insecure-diagnostics=false", "--feature-gates=MachinePool=false,ClusterTopology=false,PriorityQueue=true,ReconcilerRateLimiting=true"} {
		if !strings.Contains(args, w) {
			t.Errorf("args lack %q: %s", w, args)
		}
	}
	for _, e := range mgr["env"].([]any) {
		if m := e.(map[string]any); m["name"] == "DOCKER_HOST" && m["value"] != "" {
			t.Errorf("DOCKER_HOST = %q, want empty", m["value"])
		}
	}
	if mgr["image"] != "gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0-mirror" || !reflect.DeepEqual(comp.Images, []string{"gcr.io/k8s-staging-cluster-api/capd-manager:v1.14.0-mirror"}) {
		t.Errorf("image %v, images %v", mgr["image"], comp.Images)
	}
	var names []string
	for _, v := range comp.Variables {
		names = append(names, v.Name)
		if v.Required {
			t.Errorf("%s should have a default", v.Name)
		}
	}
	if strings.Join(names, ",") != "CAPI_DIAGNOSTICS_ADDRESS,CAPI_INSECURE_DIAGNOSTICS,EXP_MACHINE_POOL,CLUSTER_TOPOLOGY,EXP_PRIORITY_QUEUE,EXP_RECONCILER_RATE_LIMITING,CAPD_DOCKER_HOST" {
		t.Errorf("variables %v", names)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestComponentsTargetNamespaceAndRaw(t *testing.T) {
	cfg := fixtureConfig(t, "")
	c := newTestClient(t, cfg, Options{Offline: true})
	core, _ := c.Provider("cluster-api", provider.CoreProviderType)
	comp, err := c.Components(context.Background(), core, ComponentsOptions{TargetNamespace: "capi-elsewhere", SkipVariables: true})
	if err != nil {
		t.Fatal(err)
	}
	if comp.Version != "v1.14.0" || comp.Objects[0].GetKind() != "Namespace" || comp.Objects[0].GetName() != "capi-elsewhere" {
		t.Errorf("%s %s/%s", comp.Version, comp.Objects[0].GetKind(), comp.Objects[0].GetName())
	}
	dep := find(comp.Objects, "Deployment", "")
	if dep.GetNamespace() != "capi-elsewhere" {
		t.Errorf("deployment namespace %q", dep.GetNamespace())
	}
	cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	if args := strings.Join(toStrings(cs[0].(map[string]any)["args"]), " "); !strings.Contains(args, "${") {
		t.Errorf("raw mode substituted: %s", args)
	}
	// v1.10.10 (contract v1beta1) is still accepted.
	if comp, err := c.Components(context.Background(), core, ComponentsOptions{Version: "v1.10.10"}); err != nil || comp.Contract != "v1beta1" {
		t.Errorf("v1.10.10: %v", err)
	}
}

func TestComponentsBadInputs(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "infrastructure-foo")
	md := "apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3\nkind: Metadata\nreleaseSeries:\n- {major: 1, minor: 0, contract: v1beta2}\n- {major: 0, minor: 9, contract: v1alpha4}\n"
	writeTestFile(t, filepath.Join(dir, "v1.0.0", "metadata.yaml"), md)
	writeTestFile(t, filepath.Join(dir, "v1.0.0", "infrastructure-components.yaml"),
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: foo-system\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: ${FOO_B}\n  b: ${FOO_A}\n  c: ${FOO_C:=c}\n")
	writeTestFile(t, filepath.Join(dir, "v1.0.1", "metadata.yaml"), md)
	writeTestFile(t, filepath.Join(dir, "v1.0.1", "infrastructure-components.yaml"),
		"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: foo-system\n---\n<html>\n  <body>502 Bad Gateway</body>\n: oops\n")
	writeTestFile(t, filepath.Join(dir, "v0.9.0", "metadata.yaml"), md)
	writeTestFile(t, filepath.Join(dir, "v0.9.0", "infrastructure-components.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	cfg := loadConfig(t, "providers:\n- name: foo\n  type: InfrastructureProvider\n  url: "+dir+"/latest/infrastructure-components.yaml\n", nil)
	c := newTestClient(t, cfg, Options{Offline: true})
	p, _ := c.Provider("foo", provider.InfrastructureProviderType)
	ctx := context.Background()

	_, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.0.0"})
	var me *variables.MissingError
	if !errors.As(err, &me) || strings.Join(me.Names, ",") != "FOO_A,FOO_B" {
		t.Errorf("missing variables all at once, sorted: %v", err)
	}
	comp, err := c.Components(ctx, p, ComponentsOptions{Version: "v1.0.0", Lookup: variables.FromMap(map[string]string{"FOO_A": "a", "FOO_B": "b"})})
	if err != nil || find(comp.Objects, "ConfigMap", "cm").Object["data"].(map[string]any)["c"] != "c" {
		t.Errorf("with values: %v", err)
	}
	_, err = c.Components(ctx, p, ComponentsOptions{Version: "v1.0.1"})
	if err == nil || !strings.Contains(err.Error(), "infrastructure-components.yaml: line") || !strings.Contains(err.Error(), "v1.0.1") {
		t.Errorf("non-YAML components: want file and line, got %v", err)
	}
	_, err = c.Components(ctx, p, ComponentsOptions{Version: "v0.9.0"})
	if !errors.Is(err, ErrContract) {
		t.Errorf("v1alpha4 provider: %v", err)
	}
}
