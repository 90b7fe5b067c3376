package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/bundle"
)

// compactJSON is data without insignificant space, for byte comparison of two JSON documents
// written with different indentation.
func compactJSON(t *testing.T, what string, data []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, data); err != nil {
		t.Fatalf("%s is not JSON: %v\n%.400s", what, err, data)
	}
	return b.String()
}

// replayFromBundle: a bundle of env, then describe and diagnose answered from it with no
// kubeconfig: the fleet views are byte for byte the JSON the live cluster gave when the bundle
// was made (its describe.json and diagnose.json), and one cluster's tree and diagnosis, which
// the bundle never computed, are the live ones. Flags that need a live cluster are refused.
func replayFromBundle(t *testing.T, env *testenv.Env) {
	file := filepath.Join(t.TempDir(), "support.tar.gz")
	out, errOut, code := runCapctl(t, "diagnose", "bundle", "-A", "-o", file, "--kubeconfig", env.Kubeconfig)
	if code != 0 {
		t.Fatalf("diagnose bundle: exit %d:\n%s\n%s", code, out, errOut)
	}
	opened, err := bundle.Open(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, name := range []string{"describe.json", "diagnose.json", bundle.ReplayFile, bundle.WorkloadsFile} {
		if files[name], _ = opened.File(name); len(files[name]) == 0 {
			t.Fatalf("the bundle has no %s", name)
		}
	}
	// The tree of one cluster and its diagnosis, live, before the replay runs.
	liveTree, _, code := runCapctl(t, "describe", "cluster", "c", "-n", "stuck", "-o", "json", "--kubeconfig", env.Kubeconfig)
	if code != 0 {
		t.Fatalf("live describe cluster: exit %d", code)
	}

	// No kubeconfig from here on: the replay must not need one.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-such-kubeconfig"))
	for _, c := range []struct {
		args []string
		code int
		want []byte
	}{
		{[]string{"describe", "clusters", "-A", "-o", "json"}, 0, files["describe.json"]},
		{[]string{"diagnose", "clusters", "-A", "-o", "json"}, exitProblemsFound, files["diagnose.json"]},
		{[]string{"describe", "cluster", "c", "-n", "stuck", "-o", "json"}, 0, []byte(liveTree)},
	} {
		out, errOut, code := runCapctl(t, append(c.args, "--from-bundle", file)...)
		if code != c.code {
			t.Errorf("%v --from-bundle: exit %d, want %d:\n%s\n%s", c.args, code, c.code, out, errOut)
			continue
		}
		if got, want := compactJSON(t, "the replay's output", []byte(out)), compactJSON(t, "the live output", c.want); got != want {
			t.Errorf("%v --from-bundle differs from the live cluster's output:\n got %.600s\nwant %.600s", c.args, got, want)
		}
	}
	out, errOut, code = runCapctl(t, "diagnose", "cluster", "c", "-n", "stuck", "--from-bundle", file)
	if code != exitProblemsFound || !strings.Contains(out, "ERROR machine-provisioning-infrastructure  Machine stuck/c-md-a  <- root cause") {
		t.Errorf("diagnose cluster --from-bundle: exit %d:\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCapctl(t, "describe", "cluster", "ok", "-n", "elsewhere", "--from-bundle", file)
	if code != 1 || !strings.Contains(errOut, "not read when the bundle was made") && !strings.Contains(errOut, "not found") {
		t.Errorf("a namespace the bundle does not hold: exit %d:\n%s\n%s", code, out, errOut)
	}

	for _, args := range [][]string{
		{"describe", "cluster", "c", "-n", "stuck", "--watch"},
		{"describe", "clusters", "--kubeconfig", env.Kubeconfig},
		{"diagnose", "clusters", "--all-contexts"},
	} {
		_, errOut, code := runCapctl(t, append(args, "--from-bundle", file)...)
		if code != 1 || !strings.Contains(errOut, "--from-bundle and --") {
			t.Errorf("%v --from-bundle: exit %d: %s", args, code, errOut)
		}
	}
	_, errOut, code = runCapctl(t, "describe", "clusters", "--from-bundle", filepath.Join(t.TempDir(), "none.tar.gz"))
	if code != 1 || !strings.Contains(errOut, "--from-bundle") || !strings.Contains(errOut, "none.tar.gz") {
		t.Errorf("a missing bundle: exit %d: %s", code, errOut)
	}
	notBundle := filepath.Join(t.TempDir(), "x.tar.gz")
	if err := os.WriteFile(notBundle, []byte("plain text"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = runCapctl(t, "diagnose", "clusters", "--from-bundle", notBundle)
	if code != 1 || !strings.Contains(errOut, "not a gzipped bundle") {
		t.Errorf("a file that is no bundle: exit %d: %s", code, errOut)
	}
}

// bundleAcrossContexts: a bundle of every context of KUBECONFIG (two API servers and one that
// does not answer), each in its own folder, replayed with no kubeconfig: `describe clusters` and
// `diagnose clusters` over them are byte for byte the views the bundle made of the live clusters,
// the unreachable one included.
func bundleAcrossContexts(t *testing.T) {
	file := filepath.Join(t.TempDir(), "fleet.tar.gz")
	out, errOut, code := runCapctl(t, "diagnose", "bundle", "-A", "--all-contexts", "--connect-timeout", "2s", "-o", file)
	if code != 3 {
		t.Fatalf("diagnose bundle --all-contexts with one context down: exit %d, want 3:\n%s\n%s", code, out, errOut)
	}
	b, err := bundle.Open(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, m := range b.Manifest.ManagementClusters {
		dirs = append(dirs, m.Context+"="+m.Dir)
		if m.Error != "" {
			dirs[len(dirs)-1] += " (unreachable)"
		}
	}
	if got := strings.Join(dirs, ","); got != "mgmt-a=mgmt-a/,mgmt-b=mgmt-b/,down= (unreachable)" && got != "down= (unreachable),mgmt-a=mgmt-a/,mgmt-b=mgmt-b/" {
		t.Errorf("the bundle's management clusters: %s", got)
	}
	for _, name := range []string{"mgmt-a/objects/clusters.cluster.x-k8s.io.json", "mgmt-b/" + bundle.ReplayFile, "mgmt-a/" + bundle.ReplayFile} {
		if _, ok := b.File(name); !ok {
			t.Errorf("the bundle has no %s", name)
		}
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-such-kubeconfig"))
	for cmd, recorded := range map[string]string{"describe": "describe.json", "diagnose": "diagnose.json"} {
		out, errOut, code := runCapctl(t, cmd, "clusters", "-A", "-o", "json", "--from-bundle", file)
		want, _ := b.File(recorded)
		if code != 3 || compactJSON(t, "the replay's output", []byte(out)) != compactJSON(t, recorded, want) {
			t.Errorf("%s clusters --from-bundle over three contexts: exit %d, not the bundle's %s:\n got %.600s\nwant %.600s\n%s", cmd, code, recorded, out, want, errOut)
		}
	}
}
