package convert

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/internal/testing/v1beta1set"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/repository"
)

// TestConvertedAcceptedByAPIServer sends every converted object of the test sets (the classic set,
// the other kinds and the fixtures' CAPD v1.10.10 templates, rendered) to a real API server that has Cluster API
// v1.14's CRDs, as a server-side dry run with strict field validation: an unknown or misplaced
// field, a v1beta1-style reference or a missing required field is refused.
func TestConvertedAcceptedByAPIServer(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{filepath.Join(fixtures, "crds")}})
	env.CreateNamespaces(t, "team-a", "fleet")
	ctx := context.Background()

	sets := map[string][]byte{
		"classic-v1beta1.yaml": readTestdata(t, "classic-v1beta1.yaml"),
		"other-kinds.yaml":     readTestdata(t, "other-kinds.yaml"),
	}
	for _, name := range v1beta1set.Templates {
		sets[name] = v1beta1set.Render(t, name)
	}
	sent := 0
	for name, data := range sets {
		fr := ConvertText(name, data)
		for _, d := range repository.SplitDocuments(fr.Output) {
			u := &unstructured.Unstructured{}
			if err := sigsyaml.Unmarshal(d.Text, &u.Object); err != nil {
				t.Fatalf("%s line %d: %v", name, d.Line, err)
			}
			if len(u.Object) == 0 || !contract.IsClusterAPIGroup(u.GroupVersionKind().Group) {
				continue
			}
			if u.GroupVersionKind().Version != conversion.TargetVersion {
				t.Errorf("%s line %d: %s still at %s", name, d.Line, u.GetKind(), u.GetAPIVersion())
			}
			if u.GetNamespace() == "" {
				u.SetNamespace("fleet")
			}
			if err := env.Client.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Errorf("%s line %d: the API server refuses the converted %s %s: %v\n%s", name, d.Line, u.GetKind(), u.GetName(), err, d.Text)
			}
			sent++
		}
	}
	// A hand-made MachineDeployment's empty selector, however written, stays a selector the
	// API server accepts without Cluster API's defaulting webhook (spec.selector is required).
	for name, sel := range selectorsWritten {
		fr := ConvertText("md.yaml", []byte(machineDeploymentWith(sel)))
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(fr.Output, &u.Object); err != nil {
			t.Fatalf("selector %s: %v", name, err)
		}
		u.SetNamespace("fleet")
		if err := env.Client.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict")); err != nil {
			t.Errorf("selector %s: the API server refuses the converted MachineDeployment: %v\n%s", name, err, fr.Output)
		}
	}
	if sent < 30 {
		t.Errorf("only %d objects sent; the sets have more", sent)
	}
	t.Logf("%d converted objects accepted (server-side dry run, strict field validation)", sent)

	// The check can fail: the v1beta1 Cluster with only its apiVersion changed is refused.
	naive := strings.Replace(string(readTestdata(t, "classic-v1beta1.yaml")), "cluster.x-k8s.io/v1beta1\nkind: Cluster\n", "cluster.x-k8s.io/v1beta2\nkind: Cluster\n", 1)
	for _, d := range repository.SplitDocuments([]byte(naive)) {
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal(d.Text, &u.Object); err != nil {
			t.Fatal(err)
		}
		if u.GetKind() != "Cluster" {
			continue
		}
		err := env.Client.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("a v1beta1 Cluster relabelled v1beta2 was not refused: %v", err)
		}
	}
}
