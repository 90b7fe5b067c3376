package cutover

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/pkg/env"
)

func TestFilesOffline(t *testing.T) {
	file := filepath.Join("testdata", "fleet.yaml")
	rep, err := Run(context.Background(), env.Env{}, Request{Files: []string{file}, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		got = append(got, f.Check+" "+f.Object)
	}
	want := []string{
		`patch-selector ` + file + `:1 ClusterClass fleet/quick-start patch "audit" definition 0`,
		`patch-selector ` + file + `:1 ClusterClass fleet/quick-start patch "aws" definition 0`,
		`patch-path ` + file + `:1 ClusterClass fleet/quick-start patch "audit" definition 0 jsonPatch 0`,
		`manifest ` + file + `:1 ClusterClass fleet/quick-start`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	path := rep.Findings[2]
	if !strings.Contains(path.Message, "exists in v1beta1 KubeadmControlPlaneTemplate but not in v1beta2") ||
		!strings.Contains(path.Message, `"/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/extraArgs"`) {
		t.Errorf("the path finding does not say where v1beta2 stops: %s", path.Message)
	}
	if !strings.Contains(rep.Findings[0].Fix, "controlplane.cluster.x-k8s.io/v1beta2") {
		t.Errorf("the selector fix does not name the v1beta2 apiVersion: %s", rep.Findings[0].Fix)
	}
	if !strings.Contains(rep.Findings[3].Fix, "capctl convert -f "+file) {
		t.Errorf("the manifest fix does not name capctl convert: %s", rep.Findings[3].Fix)
	}
	// The AWS kind's path and the external patch cannot be checked: said, and the view is partial.
	notChecked := strings.Join(rep.NotChecked, "\n")
	for _, w := range []string{"AWSMachineTemplate", `patch "lb": an external patch`} {
		if !strings.Contains(notChecked, w) {
			t.Errorf("not checked does not name %s:\n%s", w, notChecked)
		}
	}
	if rep.ExitCode() != 3 {
		t.Errorf("exit code %d, want 3 (partial)", rep.ExitCode())
	}

	var text bytes.Buffer
	if err := rep.RenderText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"4 finding(s) in the manifests", "[patch-path]\n", "fix: set spec.patches", "Not checked (the view is partial)"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"findings"`, `"check"`, `"object"`, `"message"`, `"fix"`, `"notChecked"`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("json lacks %s: %s", field, b)
		}
	}
}

func TestCleanManifestsExitZero(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "c.yaml"), "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: c\n")
	rep, err := Run(context.Background(), env.Env{}, Request{Files: []string{dir}, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 || rep.ExitCode() != 0 {
		t.Fatalf("a v1beta2 manifest: findings %v, exit %d", rep.Findings, rep.ExitCode())
	}
}

func TestRequestValidate(t *testing.T) {
	if err := (Request{Offline: true}).Validate(); err == nil || !strings.Contains(err.Error(), "-f") {
		t.Errorf("--offline without files: %v", err)
	}
	if _, err := Run(context.Background(), env.Env{}, Request{}); err == nil {
		t.Error("a run without a management cluster and without --offline succeeded")
	}
}
