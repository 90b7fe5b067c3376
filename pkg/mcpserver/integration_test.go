package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
	"github.com/capctl/capctl/pkg/bundle"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/mcpserver"
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
		c := classfixture.Cluster("fleet", name, "v1.34.2", 1)
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

// everyToolReadsOnly runs `capctl mcp` over stdio as a cluster admin, lists its tools (each
// read-only, with an object input schema), calls every one, and finds in the API server's audit
// log no request of that identity that could have changed anything.
// session is what the MCP tests share: the management cluster, a second one (a replacement's
// target), the built capctl, its configuration and the session identity's kubeconfig.
type session struct {
	te, target *testenv.Env
	bin        string
	dir        string
	config     string
	kubeconfig string
}

func newSession(t *testing.T) *session {
	t.Helper()
	testenv.Integration(t)
	envs := make(chan *testenv.Env, 1)
	go func() { envs <- testenv.Start(t, testenv.Options{}) }()
	s := &session{te: mgmt(t)}
	s.target = <-envs
	s.bin = testenv.BuildCapctl(t)
	s.dir = t.TempDir()
	var err error
	if s.config, err = livemgmt.WriteConfig(filepath.Join(s.dir, "config"), testenv.FixturesDir(t)); err != nil {
		t.Fatal(err)
	}
	s.kubeconfig = s.te.UserKubeconfig(t, sessionUser, "system:masters")
	return s
}

// command is `capctl mcp` with args, as the session identity, with the test's config.
func (s *session) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.bin, append([]string{"mcp", "--kubeconfig", s.kubeconfig, "--config", s.config}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(s.dir, "cache"), "XDG_CONFIG_HOME="+filepath.Join(s.dir, "home"))
	return cmd
}

// checkNoWrites fails the test when the audit log holds a write of the session identity, or
// nothing of it at all (the check would prove nothing).
func (s *session) checkNoWrites(t *testing.T) {
	t.Helper()
	n := s.te.Requests(t, sessionUser)
	if n == 0 {
		t.Fatal("the audit log holds no request of the MCP server's identity: the check would prove nothing")
	}
	if w := s.te.Writes(t, sessionUser); len(w) > 0 {
		t.Errorf("the MCP sessions sent %d write request(s):\n  %s", len(w), strings.Join(w, "\n  "))
	}
	t.Logf("%d requests of %s audited, none a write", n, sessionUser)
}

// fromBundle: `capctl mcp --from-bundle`, with no kubeconfig, serves the tools a support bundle
// answers, and describe_clusters and diagnose_clusters answer byte for byte what the bundle
// recorded of the live cluster.
func fromBundle(t *testing.T, s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "support.tar.gz")
	mk := exec.CommandContext(ctx, s.bin, "diagnose", "bundle", "-A", "-o", file, "--kubeconfig", s.kubeconfig, "--config", s.config)
	mk.Env = s.command(ctx).Env
	if out, err := mk.CombinedOutput(); err != nil && mk.ProcessState.ExitCode() != 3 {
		t.Fatalf("diagnose bundle: %v\n%s", err, out)
	}
	b, err := bundle.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, s.bin, "mcp", "--from-bundle", file, "--config", s.config)
	cmd.Env = append(s.command(ctx).Env, "KUBECONFIG="+filepath.Join(t.TempDir(), "no-kubeconfig"))
	var stderr strings.Builder
	session := serves(ctx, t, cmd, &stderr, mcpserver.Replayable)
	defer session.Close()
	for tool, recorded := range map[string]string{"describe_clusters": "describe.json", "diagnose_clusters": "diagnose.json"} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"allNamespaces": true}})
		if err != nil || res.IsError || len(res.Content) == 0 {
			t.Errorf("%s from a bundle: %v %+v\n%s", tool, err, res, stderr.String())
			continue
		}
		tc, _ := res.Content[0].(*mcp.TextContent)
		data, _ := b.File(recorded)
		var got, wantJSON bytes.Buffer
		if tc == nil || json.Compact(&got, []byte(tc.Text)) != nil || json.Compact(&wantJSON, data) != nil || got.String() != wantJSON.String() {
			t.Errorf("%s from a bundle is not the bundle's %s:\n got %.500s\nwant %.500s", tool, recorded, got.String(), wantJSON.String())
		}
	}
}

// serves connects a client to the capctl mcp process of cmd and checks it lists exactly the tools
// want.
func serves(ctx context.Context, t *testing.T, cmd *exec.Cmd, stderr *strings.Builder, want []string) *mcp.ClientSession {
	t.Helper()
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "capctl-test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v\n%s", strings.Join(cmd.Args, " "), err, stderr.String())
	}
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	want = slices.Sorted(slices.Values(want))
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("%s lists the tools %v, want %v", strings.Join(cmd.Args, " "), names, want)
	}
	return session
}

// overContexts: `capctl mcp --all-contexts` over the two test API servers serves the tools that
// work over several management clusters, and describe_clusters answers one view of both.
func overContexts(t *testing.T, s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kubeconfigs := s.te.KubeconfigAs(t, "mgmt-a") + string(os.PathListSeparator) + s.target.KubeconfigAs(t, "mgmt-b")
	cmd := exec.CommandContext(ctx, s.bin, "mcp", "--all-contexts", "--config", s.config)
	cmd.Env = append(s.command(ctx).Env, "KUBECONFIG="+kubeconfigs)
	var stderr strings.Builder
	session := serves(ctx, t, cmd, &stderr, mcpserver.Several)
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "describe_clusters", Arguments: map[string]any{"allNamespaces": true}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("describe_clusters over two management clusters: %v %+v\n%s", err, res, stderr.String())
	}
	var view struct {
		Clusters []struct {
			ManagementCluster string `json:"managementCluster"`
			Name              string `json:"name"`
		} `json:"clusters"`
		ManagementClusters []struct {
			Name string `json:"name"`
		} `json:"managementClusters"`
	}
	tc, _ := res.Content[0].(*mcp.TextContent)
	if tc == nil || json.Unmarshal([]byte(tc.Text), &view) != nil || len(view.ManagementClusters) != 2 || len(view.Clusters) != 2 || view.Clusters[0].ManagementCluster != "mgmt-a" {
		t.Errorf("describe_clusters over two management clusters: %.800s", res.Content)
	}
}

func everyToolReadsOnly(t *testing.T, s *session) {
	te := s.te
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := s.command(ctx)
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
	args := toolArgs(t, te, s.target.Kubeconfig)
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
	ro, err := cluster.Connect(ctx, cluster.Options{Kubeconfig: s.kubeconfig, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "written"}}
	if err := ro.Create(ctx, cm); !errors.Is(err, cluster.ErrReadOnly) {
		t.Errorf("a create through the read-only client: %v, want it refused before sending", err)
	}
	s.checkNoWrites(t)
	t.Logf("%d tools called", len(names))
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// conformanceScenarios are the conformance suite's server scenarios for what a tools-only server
// must support: the handshake, ping, tool listing, the streamable HTTP transport's concurrent
// streams and DNS-rebinding protection, and logging/setLevel (the SDK answers it). The others
// test prompts, resources, completions, sampling or elicitation, or need the suite's own test
// tools (json-schema-2020-12, tools-call-*); server-sse-polling checks only SHOULDs.
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection", "server-sse-multiple-streams", "logging-set-level"}

// passed is the suite's verdict line: every check passed, none failed, no warning.
var passed = regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed, 0 warnings`)

// externalClientAndConformance: the official TypeScript SDK's client lists and calls every
// tool of `capctl mcp` over stdio, and the official conformance suite passes its scenarios for a
// tools-only server against `capctl mcp --http`; neither session writes anything.
func externalClientAndConformance(t *testing.T, s *session) {
	tools, node := testenv.MCPTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	argsFile := filepath.Join(s.dir, "args.json")
	b, err := json.Marshal(toolArgs(t, s.te, s.target.Kubeconfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(argsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	mcpCmd := s.command(ctx)
	client := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "client.mjs")}, mcpCmd.Args...)...)
	client.Env = append(mcpCmd.Env, "MCP_SDK_DIR="+filepath.Join(tools, "node_modules", "@modelcontextprotocol", "sdk"), "MCP_TOOL_ARGS="+argsFile)
	var stderr strings.Builder
	client.Stderr = &stderr
	out, err := client.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, stderr.String())
	}
	var summary struct {
		Server struct{ Name string } `json:"server"`
		Tools  []struct {
			Name      string `json:"name"`
			ReadOnly  bool   `json:"readOnly"`
			InputType string `json:"inputType"`
		} `json:"tools"`
		Calls map[string]struct {
			IsError bool   `json:"isError"`
			JSON    bool   `json:"json"`
			Error   string `json:"error"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(out, &summary); err != nil {
		t.Fatalf("the TypeScript client's summary: %v\n%s", err, out)
	}
	if summary.Server.Name != "capctl" || len(summary.Tools) != len(toolArgs(t, s.te, s.target.Kubeconfig)) {
		t.Errorf("the TypeScript client saw server %q with %d tools", summary.Server.Name, len(summary.Tools))
	}
	for _, tool := range summary.Tools {
		call := summary.Calls[tool.Name]
		if !tool.ReadOnly || tool.InputType != "object" || call.IsError || !call.JSON {
			t.Errorf("TypeScript client, tool %s: read-only %v, input %q, call %+v", tool.Name, tool.ReadOnly, tool.InputType, call)
		}
	}

	// The conformance suite speaks streamable HTTP.
	server := s.command(ctx, "--http", "127.0.0.1:0")
	errPipe, err := server.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Process.Kill(); _ = server.Wait() }()
	url := ""
	sc := bufio.NewScanner(errPipe)
	for sc.Scan() {
		if _, rest, ok := strings.Cut(sc.Text(), "serving MCP at "); ok {
			url = strings.Fields(rest)[0] + "mcp"
			break
		}
	}
	if url == "" {
		t.Fatal("capctl mcp --http did not say where it serves")
	}
	go func() { _, _ = io.Copy(io.Discard, errPipe) }()
	for _, scenario := range conformanceScenarios {
		suite := exec.CommandContext(ctx, node, filepath.Join(tools, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
			"server", "--url", url, "--scenario", scenario)
		res, err := suite.CombinedOutput()
		if m := passed.FindStringSubmatch(string(res)); err != nil || m == nil || m[1] != m[2] || m[1] == "0" {
			t.Errorf("conformance scenario %s: %v\n%s", scenario, err, res)
			continue
		}
		t.Logf("conformance %s:\n%s", scenario, res)
	}
	s.checkNoWrites(t)
}

// TestMCPServer is the MCP server's checks on one pair of test API servers and one build of
// capctl (each costs seconds of a 2-core machine's time): every tool read-only over stdio with
// Go's client, then the TypeScript client and the conformance suite (skipped without Node), and
// in the end the audit log: no write of the session identity.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	s := newSession(t)
	t.Run("every tool reads only", func(t *testing.T) { everyToolReadsOnly(t, s) })
	t.Run("external client and conformance", func(t *testing.T) { externalClientAndConformance(t, s) })
	t.Run("from a bundle", func(t *testing.T) { fromBundle(t, s) })
	t.Run("over two management clusters", func(t *testing.T) { overContexts(t, s) })
	s.checkNoWrites(t)
}
