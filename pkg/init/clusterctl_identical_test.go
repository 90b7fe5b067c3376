package clusterinit_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/installtest"
	"github.com/capctl/capctl/internal/testing/testenv"
	clusterinit "github.com/capctl/capctl/pkg/init"
	"github.com/capctl/capctl/pkg/inventory"
)

// objectGroups are the kinds whose objects `capctl init` and `clusterctl init` must leave
// identical. all: every object of the kind (CRDs: the inventory CRD, providers' and
// cert-manager's); otherwise only objects carrying one of clusterctl's labels.
var objectGroups = []struct {
	name string
	gvk  schema.GroupVersionKind
	all  bool
}{
	{"inventory", inventory.GVK, true},
	{"CRDs", schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, true},
	{"Deployments", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, false},
	{"validating webhooks", schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}, false},
	{"mutating webhooks", schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}, false},
	{"Namespaces", schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false},
	{"Services", schema.GroupVersionKind{Version: "v1", Kind: "Service"}, false},
	{"ServiceAccounts", schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, false},
	{"ClusterRoles", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, false},
	{"ClusterRoleBindings", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}, false},
	{"Roles", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}, false},
	{"RoleBindings", schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, false},
}

// TestCapctlInitIsClusterctlInit runs `clusterctl init` on one API server and capctl init with
// the same providers and versions on another, then compares every object group: same objects,
// same labels and annotations, same specs (server-set metadata and status left out).
func TestCapctlInitIsClusterctlInit(t *testing.T) {
	bin := needClusterctl(t)
	fixtures := testenv.FixturesDir(t)
	cfgPath := writeConfig(t, fixtures)
	ref, ours := testenv.StartPair(t, testenv.Options{})
	ctx := testenv.Context(t)
	// The namespace controller's part: both probes delete cert-manager-test.
	for _, e := range []*testenv.Env{ref, ours} {
		ctl := installtest.Start(ctx, e.Client, installtest.Options{Interval: 250 * time.Millisecond, NotReady: true, FinalizeNamespaces: []string{"cert-manager-test"}})
		defer ctl.Stop()
	}
	runClusterctl(t, ctx, bin, t.TempDir(), ref.Kubeconfig, cfgPath, "init", "--core", "cluster-api:v1.14.0", "-b", "kubeadm:v1.14.0", "-c", "kubeadm:v1.14.0", "-i", "docker:v1.14.0")
	_, err := clusterinit.InitWith(ctx, clients(t, cfgPath, ours.Config), clusterinit.InitRequest{StrictChecks: true,
		Selection: clusterinit.Selection{Core: "cluster-api:v1.14.0", Bootstrap: []string{"kubeadm:v1.14.0"}, ControlPlane: []string{"kubeadm:v1.14.0"}, Infrastructure: []string{"docker:v1.14.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range objectGroups {
		want := snapshot(t, ctx, ref.Client, g.gvk, g.all)
		got := snapshot(t, ctx, ours.Client, g.gvk, g.all)
		if len(want) == 0 {
			t.Errorf("%s: clusterctl installed none; the comparison would prove nothing", g.name)
		}
		for _, d := range diffSnapshots("clusterctl", "capctl", want, got) {
			t.Errorf("%s: %s", g.name, d)
		}
	}
}

// snapshot lists the objects of a kind, keyed by namespace/name, without what the server sets.
func snapshot(t *testing.T, ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, all bool) map[string]map[string]any {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, list); err != nil {
		t.Fatalf("listing %s: %v", gvk.Kind, err)
	}
	out := map[string]map[string]any{}
	for _, u := range list.Items {
		l := u.GetLabels()
		_, a := l[inventory.ClusterctlLabel]
		_, b := l[inventory.ProviderLabel]
		_, c := l[inventory.CoreLabel]
		if !all && !a && !b && !c {
			continue
		}
		obj := u.DeepCopy().Object
		unstructured.RemoveNestedField(obj, "status")
		for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
			unstructured.RemoveNestedField(obj, "metadata", f)
		}
		if gvk.Kind == "CustomResourceDefinition" {
			// capctl writes its own inventory CRD: the schema's documentation prose and
			// clusterctl's generator annotation are its own; every field that tools or the
			// API server act on (labels, names, versions, schema types, printer columns) is
			// compared.
			stripDescriptions(obj["spec"])
			unstructured.RemoveNestedField(obj, "metadata", "annotations", "controller-gen.kubebuilder.io/version")
			if a, _, _ := unstructured.NestedMap(obj, "metadata", "annotations"); len(a) == 0 {
				unstructured.RemoveNestedField(obj, "metadata", "annotations")
			}
		}
		if gvk.Kind == "Service" {
			// Addresses the server allocates.
			for _, f := range []string{"clusterIP", "clusterIPs"} {
				unstructured.RemoveNestedField(obj, "spec", f)
			}
		}
		out[u.GetNamespace()+"/"+u.GetName()] = obj
	}
	return out
}

// stripDescriptions removes every "description" string field below v.
func stripDescriptions(v any) {
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t["description"].(string); ok {
			delete(t, "description")
		}
		for _, e := range t {
			stripDescriptions(e)
		}
	case []any:
		for _, e := range t {
			stripDescriptions(e)
		}
	}
}

// diffSnapshots lists objects only one side has and fields that differ (at most 20 lines).
func diffSnapshots(wantBy, gotBy string, want, got map[string]map[string]any) []string {
	var out []string
	for _, k := range unionKeys(want, got) {
		w, inW := want[k]
		g, inG := got[k]
		switch {
		case !inG:
			out = append(out, k+": installed by "+wantBy+", not by "+gotBy)
		case !inW:
			out = append(out, k+": installed by "+gotBy+", not by "+wantBy)
		default:
			for _, d := range diffValues("", w, g) {
				out = append(out, k+": "+d)
			}
		}
		if len(out) > 20 {
			return append(out[:20], "...")
		}
	}
	return out
}

// unionKeys is the sorted keys of both maps.
func unionKeys[V any](a, b map[string]V) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func diffValues(path string, w, g any) []string {
	wm, okW := w.(map[string]any)
	gm, okG := g.(map[string]any)
	if okW && okG {
		var out []string
		for _, k := range unionKeys(wm, gm) {
			out = append(out, diffValues(path+"."+k, wm[k], gm[k])...)
		}
		return out
	}
	if reflect.DeepEqual(w, g) {
		return nil
	}
	short := func(v any) string {
		s := fmt.Sprintf("%v", v)
		if v == nil {
			s = "(absent)"
		}
		if len(s) > 120 {
			s = s[:120] + "..."
		}
		return strings.ReplaceAll(s, "\n", " ")
	}
	return []string{fmt.Sprintf("%s: clusterctl %s, capctl %s", strings.TrimPrefix(path, "."), short(w), short(g))}
}
