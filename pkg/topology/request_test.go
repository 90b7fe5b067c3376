package topology

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/topologyengine"
)

func TestPlanRequestValidate(t *testing.T) {
	ok := PlanRequest{Files: []string{"x"}, Concurrency: 1}
	for _, tc := range []struct {
		name string
		edit func(*PlanRequest)
		want string
	}{
		{"no files", func(r *PlanRequest) { r.Files = nil }, "-f is required"},
		{"stdin twice", func(r *PlanRequest) { r.Files = []string{"-", "-"} }, "standard input"},
		{"both namespace flags", func(r *PlanRequest) { r.Namespace, r.AllNamespaces = "a", true }, "--all-namespaces"},
		{"bad namespace", func(r *PlanRequest) { r.Namespace = "Bad_NS" }, "--namespace"},
		{"bad cluster", func(r *PlanRequest) { r.Clusters = []string{"a/b"} }, "--cluster"},
		{"bad selector", func(r *PlanRequest) { r.Selector = "a in (" }, "--selector"},
		{"no concurrency", func(r *PlanRequest) { r.Concurrency = 0 }, "--concurrency"},
	} {
		r := ok
		tc.edit(&r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want it to name %q", tc.name, err, tc.want)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}

func TestReadInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata: {name: c}\n---\napiVersion: infrastructure.cluster.x-k8s.io/v1beta2\nkind: DevMachineTemplate\nmetadata: {name: t}\n")
	write("b.yml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata: {name: x, namespace: n}\n")
	write("notes.txt", "not read")
	in, err := readInputs(context.Background(), PlanRequest{Files: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.classes) != 1 || len(in.templates) != 1 || len(in.clusters) != 1 || len(in.list) != 3 || !strings.HasPrefix(in.list[0].Digest, "sha256:") {
		t.Errorf("inputs %+v", in.list)
	}
	write("dup.yaml", "apiVersion: cluster.x-k8s.io/v1beta2\nkind: ClusterClass\nmetadata: {name: c}\n")
	if _, err := readInputs(context.Background(), PlanRequest{Files: []string{dir}}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a class given twice: %v", err)
	}
	if _, err := readInputs(context.Background(), PlanRequest{Files: []string{"-"}, Stdin: strings.NewReader("")}); err == nil || !strings.Contains(err.Error(), "no ClusterClass, template or Cluster") {
		t.Errorf("empty input: %v", err)
	}
	// Bounded as every user file: an endless standard input stops at the limit, named.
	defer userinput.SetMax(userinput.SetMax(1 << 10))
	endless := io.MultiReader(strings.NewReader("apiVersion: v1\nkind: ConfigMap\n"), zeros{})
	if _, err := readInputs(context.Background(), PlanRequest{Files: []string{"-"}, Stdin: endless}); err == nil || !userinput.IsTooLarge(err) {
		t.Errorf("endless input: %v", err)
	}
	// A file past the limit (sparse: 100 MB of holes against a 1 KiB limit here, 64 MiB by
	// default) is refused by its size, named, before it is read.
	big := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(big, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 100<<20); err != nil {
		t.Fatal(err)
	}
	if _, err := readInputs(context.Background(), PlanRequest{Files: []string{big}}); err == nil || !userinput.IsTooLarge(err) || !strings.Contains(err.Error(), "huge.yaml") {
		t.Errorf("a 100 MB file: %v", err)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func TestExitCode(t *testing.T) {
	changed := ClusterPlan{Outcome: topologyengine.Outcome{Changes: []topologyengine.Change{{Kind: "K"}}}}
	for _, tc := range []struct {
		r    PlanResult
		want int
	}{
		{PlanResult{}, ExitNoChanges},
		{PlanResult{Clusters: []ClusterPlan{{}}}, ExitNoChanges},
		{PlanResult{Clusters: []ClusterPlan{changed}}, ExitChanges},
		{PlanResult{Clusters: []ClusterPlan{changed, {Refused: "no"}}}, ExitRefused},
		{PlanResult{Clusters: []ClusterPlan{{Refused: "no"}, {Outcome: topologyengine.Outcome{Partial: "x"}}}}, ExitPartial},
	} {
		if got := tc.r.ExitCode(); got != tc.want {
			t.Errorf("%+v: exit %d, want %d", tc.r, got, tc.want)
		}
	}
}
