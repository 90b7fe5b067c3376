package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capctl/capctl/internal/iostreams"
	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// TestDescribeCommands runs `capctl describe cluster|clusters` against one real API server.
func TestDescribeCommands(t *testing.T) {
	testenv.Integration(t)
	testenv.FixturesDir(t)
	env := testenv.Start(t, testenv.Options{})
	describetest.InstallCRDs(t, env)
	healthy, stuck := describetest.Healthy(), describetest.Provisioning()
	for _, s := range []*describetest.Scenario{healthy, stuck} {
		s.Create(context.Background(), t, env)
	}
	kc := []string{"--kubeconfig", env.Kubeconfig}
	// The clock of SINCE is fixed through the options (the run function the tests pass).
	now := func() time.Time { return describetest.Now }
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runDescribe(t, now, append(args, kc...)...)
	}

	t.Run("tree matches the package's golden output", func(t *testing.T) {
		out, errOut, code := run("describe", "cluster", "prod", "-n", "healthy")
		want, err := os.ReadFile(filepath.Join("..", "..", "pkg", "describe", "testdata", "healthy.golden"))
		if err != nil {
			t.Fatal(err)
		}
		if code != 0 || out != string(want) {
			t.Errorf("exit %d, stderr %s\n--- got:\n%s\n--- want:\n%s", code, errOut, out, want)
		}
	})
	t.Run("forced colour", func(t *testing.T) {
		out, _, code := run("describe", "cluster", "prod", "-n", "healthy", "--color")
		if code != 0 || !strings.Contains(out, "\x1b[32mTrue\x1b[0m") {
			t.Errorf("exit %d, no green True in:\n%q", code, out)
		}
	})
	t.Run("json", func(t *testing.T) {
		out, errOut, code := run("describe", "cluster", "stuck", "-n", "provisioning", "-o", "json")
		var tree struct {
			Cluster struct {
				FirstFailing string `json:"firstFailing"`
			} `json:"cluster"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &tree) != nil || !strings.HasPrefix(tree.Cluster.FirstFailing, "DockerCluster provisioning/stuck") {
			t.Errorf("exit %d, stderr %s, out:\n%s", code, errOut, out)
		}
	})
	t.Run("clusters summary", func(t *testing.T) {
		now = time.Now
		defer func() { now = func() time.Time { return describetest.Now } }()
		out, errOut, code := run("describe", "clusters", "-A")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE") ||
			!strings.Contains(lines[1], "healthy") || !strings.Contains(lines[1], "3/3") || !strings.Contains(lines[1], "v1.34.1") ||
			!strings.Contains(lines[2], "stuck") || !strings.Contains(lines[2], "NotAvailable") || !strings.Contains(lines[2], "0/2") ||
			!strings.HasSuffix(lines[1], "s") {
			t.Errorf("summary:\n%s", out)
		}
		out, _, code = run("describe", "clusters", "-n", "healthy", "-o", "yaml")
		if code != 0 || !strings.Contains(out, "name: prod") || strings.Contains(out, "stuck") {
			t.Errorf("namespaced yaml summary (exit %d):\n%s", code, out)
		}
	})
	t.Run("show-conditions of a kind not in the tree is refused", func(t *testing.T) {
		out, errOut, code := run("describe", "cluster", "prod", "-n", "healthy", "--show-conditions", "Cluster,NoSuchKind")
		if code != 1 || out != "" || !strings.Contains(errOut, "NoSuchKind") || !strings.Contains(errOut, "DockerCluster, DockerMachine") {
			t.Errorf("exit %d, stdout %q, stderr %s", code, out, errOut)
		}
	})
	t.Run("cluster not found lists the clusters there", func(t *testing.T) {
		_, errOut, code := run("describe", "cluster", "nope", "-n", "healthy")
		if code != 1 || !strings.Contains(errOut, `cluster "nope" not found in namespace "healthy"; clusters there: prod`) {
			t.Errorf("exit %d: %s", code, errOut)
		}
		_, errOut, code = run("describe", "cluster", "prod", "-n", "no-such-ns")
		if code != 1 || !strings.Contains(errOut, `namespace "no-such-ns" not found`) {
			t.Errorf("exit %d: %s", code, errOut)
		}
	})
}

// runDescribe runs capctl with the describe commands built with a fixed clock.
func runDescribe(t *testing.T, now func() time.Time, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	f := newFactory(io)
	root := newRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "describe" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newCmdDescribe(f,
		func(o *describeClusterOptions) error { o.Now = now; return runDescribeCluster(context.Background(), o) },
		func(o *describeClustersOptions) error {
			o.Now = now
			return runDescribeClusters(context.Background(), o)
		}))
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(errOut, "Error: %v\n", err)
		return out.String(), errOut.String(), 1
	}
	return out.String(), errOut.String(), 0
}

func TestDescribeUsageAndUnreachable(t *testing.T) {
	// Bad flags fail before any cluster is contacted (the kubeconfig does not even exist).
	for _, args := range [][]string{
		{"describe", "cluster", "x", "--show-conditions", "Machine, Cluster"},
		{"describe", "cluster", "x", "-o", "xml"},
		{"describe", "cluster"},
		{"describe", "clusters", "-A", "-n", "x"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--kubeconfig", "/nonexistent/kubeconfig")...)
		if code != 1 || !strings.Contains(errOut, "Usage:") || strings.Contains(errOut, "nonexistent") {
			t.Errorf("%v: exit %d, want a usage error:\n%s", args, code, errOut)
		}
	}
	// An API server that does not answer.
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCapctl(t, "describe", "cluster", "x", "--kubeconfig", kc, "--connect-timeout", "2s")
	if code != 1 || !strings.Contains(errOut, "cannot reach the API server https://127.0.0.1:1") {
		t.Errorf("unreachable: exit %d: %s", code, errOut)
	}
}

// TestDescribeFlagsToOptions parses flags into the options without any cluster.
func TestDescribeFlagsToOptions(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	var got *describeClusterOptions
	cmd := newCmdDescribe(newFactory(io), func(o *describeClusterOptions) error { got = o; return nil }, nil)
	cmd.SetArgs([]string{"cluster", "c1", "-n", "prod", "--show-conditions", "Machine+", "--grouping=false", "--v1beta2=false", "-o", "json", "--color"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	d := got.Describe
	if d.Name != "c1" || d.Namespace != "prod" || d.ShowConditions != "Machine+" || d.Grouping || !d.V1Beta1 || got.Output != "json" ||
		got.Color == nil || !*got.Color || got.Now == nil || got.WatchInterval != 2*time.Second {
		t.Errorf("options %+v", got)
	}
	var gotList *describeClustersOptions
	cmd = newCmdDescribe(newFactory(io), nil, func(o *describeClustersOptions) error { gotList = o; return nil })
	cmd.SetArgs([]string{"clusters", "-A"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !gotList.AllNamespaces || gotList.Color != nil || gotList.Output != "text" {
		t.Errorf("clusters options %+v", gotList)
	}
}
