package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/classfixture"
	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
)

// sessionUser is the identity of the MCP server's kubeconfig: a cluster admin, so that the
// audit log's zero writes show the server's guard, not RBAC.
const sessionUser = "mcp-session"

// mgmt is a test API server with the v1.14 providers' CRDs, their inventory, the in-memory
// ClusterClass and two topology Clusters in namespace fleet.
func mgmt(t *testing.T) *testenv.Env {
	t.Helper()
	crds := testenv.ComponentCRDs(t, "v1.14.0", "cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker")
	te := testenv.Start(t, testenv.Options{Audit: true, CRDPaths: []string{crds, filepath.Join(testenv.FixturesDir(t), "crds", "clusterctl.cluster.x-k8s.io.yaml")}})
	te.CreateNamespaces(t, "fleet", "capi-system")
	ctx := context.Background()
	classfixture.WriteInventory(t, te.Client, "v1.14.0", "capi-system")
	// The label clusterctl's init gives the CRDs: what move discovers its kinds by.
	crdList := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := te.Client.List(ctx, crdList); err != nil {
		t.Fatal(err)
	}
	for i := range crdList.Items {
		crd := &crdList.Items[i]
		if crd.Labels == nil {
			crd.Labels = map[string]string{}
		}
		crd.Labels[inventory.ClusterctlLabel] = ""
		if err := te.Client.Update(ctx, crd); err != nil {
			t.Fatal(err)
		}
	}
	classfixture.Create(t, te.Client, "v1.14.0", "fleet", nil)
	for _, name := range []string{"c-1", "c-2"} {
		c := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
			"metadata": map[string]any{"namespace": "fleet", "name": name},
			"spec": map[string]any{"topology": map[string]any{
				"classRef": map[string]any{"name": "in-memory"}, "version": "v1.34.2",
				"controlPlane": map[string]any{"replicas": int64(1)},
				"workers": map[string]any{"machineDeployments": []any{
					map[string]any{"class": "default-worker", "name": "md-0", "replicas": int64(1)},
				}},
			}},
		}}
		if err := te.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return te
}

// changedClass is the live class with a label added to its control plane metadata, as YAML.
func changedClass(t *testing.T, te *testenv.Env) string {
	t.Helper()
	cc := &unstructured.Unstructured{}
	cc.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cc.SetKind("ClusterClass")
	if err := te.Client.Get(context.Background(), clientKey("fleet", "in-memory"), cc); err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cc.GetAPIVersion(), "kind": "ClusterClass", "spec": cc.Object["spec"]}}
	out.SetNamespace("fleet")
	out.SetName("in-memory")
	_ = unstructured.SetNestedField(out.Object, "blue", "spec", "controlPlane", "metadata", "labels", "team")
	b, err := sigsyaml.Marshal(out.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolArgs are arguments for every tool, valid on mgmt (target: a second API server).
func toolArgs(t *testing.T, te *testenv.Env, targetKubeconfig string) map[string]map[string]any {
	return map[string]map[string]any{
		"describe_cluster":      {"name": "c-1", "namespace": "fleet"},
		"describe_clusters":     {"allNamespaces": true},
		"diagnose_cluster":      {"name": "c-1", "namespace": "fleet"},
		"diagnose_clusters":     {"namespace": "fleet"},
		"get_providers":         {},
		"upgrade_plan":          {},
		"upgrade_history":       {},
		"topology_plan":         {"manifests": changedClass(t, te), "namespace": "fleet"},
		"move_plan_replacement": {"toKubeconfig": targetKubeconfig, "namespace": "fleet"},
		"auth_can_i":            {"command": "move", "namespace": "fleet"},
		"diagnose_v1beta1":      {"manifests": "apiVersion: cluster.x-k8s.io/v1beta1\nkind: Cluster\nmetadata: {name: old, namespace: fleet}\n"},
	}
}

// TestEveryToolReadsOnly runs `capctl mcp` over stdio as a cluster admin, lists its tools (each
// read-only, with an object input schema), calls every one, and finds in the API server's audit
// log no request of that identity that could have changed anything.
func TestEveryToolReadsOnly(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	envs := make(chan *testenv.Env, 1)
	go func() { envs <- testenv.Start(t, testenv.Options{}) }()
	te := mgmt(t)
	target := <-envs
	bin := testenv.BuildCapctl(t)
	dir := t.TempDir()
	config, err := livemgmt.WriteConfig(filepath.Join(dir, "config"), testenv.FixturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := te.UserKubeconfig(t, sessionUser, "system:masters")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--kubeconfig", kubeconfig, "--config", config)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_CONFIG_HOME="+filepath.Join(dir, "home"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "capctl-test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to capctl mcp: %v\n%s", err, stderr.String())
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := toolArgs(t, te, target.Kubeconfig)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not marked read-only", tool.Name)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("tool %s: input schema %s", tool.Name, schema)
		}
	}
	sort.Strings(names)
	var want []string
	for n := range args {
		want = append(want, n)
	}
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("tools %v, want %v", names, want)
	}
	for _, name := range names {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args[name]})
		if err != nil {
			t.Errorf("calling %s: %v", name, err)
			continue
		}
		text := ""
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if res.IsError {
			t.Errorf("%s returned an error: %s", name, text)
			continue
		}
		// The command's JSON; an object is also the structured content (MCP's structured
		// content is an object: a command printing a list gives it as text only).
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Errorf("%s: the result is not JSON (%v): %.300s", name, err, text)
		}
		if _, object := v.(map[string]any); object != (res.StructuredContent != nil) {
			t.Errorf("%s: structured content %v for a result of type %T", name, res.StructuredContent != nil, v)
		}
	}
	// What one tool says, as the command's JSON would: the topology plan reaches both clusters.
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "topology_plan", Arguments: args["topology_plan"]})
	if err == nil && !res.IsError {
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, `"c-1"`) || !strings.Contains(tc.Text, `"c-2"`) {
			t.Errorf("topology_plan does not name both clusters: %.500s", res.Content)
		}
	}
	if err := session.Close(); err != nil {
		t.Logf("closing the session: %v", err)
	}
	// The guard beneath: the same identity through a read-only client cannot send a write.
	ro, err := cluster.Connect(ctx, cluster.Options{Kubeconfig: kubeconfig, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "written"}}
	if err := ro.Create(ctx, cm); !errors.Is(err, cluster.ErrReadOnly) {
		t.Errorf("a create through the read-only client: %v, want it refused before sending", err)
	}
	if n := te.Requests(t, sessionUser); n == 0 {
		t.Fatal("the audit log holds no request of the MCP server's identity: the check would prove nothing")
	}
	if w := te.Writes(t, sessionUser); len(w) > 0 {
		t.Errorf("the MCP session sent %d write request(s):\n  %s", len(w), strings.Join(w, "\n  "))
	}
	t.Logf("%d tools called; %d requests of %s audited, none a write", len(names), te.Requests(t, sessionUser), sessionUser)
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
