package templates

import (
	"bytes"
	"testing"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/variables"
)

func TestVariableListingRender(t *testing.T) {
	l := &VariableListing{
		Required: []string{"KUBERNETES_VERSION"},
		Optional: []OptionalVariable{{Name: "CLUSTER_NAME", Default: "c1"}, {Name: "POD_CIDR", Default: `"[\"192.168.0.0/16\"]"`}},
	}
	var b bytes.Buffer
	if err := l.Render(&b, output.Text); err != nil {
		t.Fatal(err)
	}
	want := "Required Variables:\n  - KUBERNETES_VERSION\n\nOptional Variables:\n" +
		"  - CLUSTER_NAME  (defaults to c1)\n" +
		"  - POD_CIDR      (defaults to \"[\\\"192.168.0.0/16\\\"]\")\n\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := (&VariableListing{Required: []string{}, Optional: []OptionalVariable{}}).Render(&b, output.JSON); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"required\": [],\n  \"optional\": []\n}\n"; b.String() != want {
		t.Errorf("json: %q", b.String())
	}
}

func TestFlavorListRender(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := (&FlavorList{Provider: "docker", Version: "v1.14.0", Flavors: []string{"", "development"}}).RenderFlavors(&out, &errOut, output.Text); err != nil {
		t.Fatal(err)
	}
	if out.String() != "(default)\ndevelopment\n" || errOut.Len() != 0 {
		t.Errorf("flavors: %q, stderr %q", out.String(), errOut.String())
	}
	out.Reset()
	if err := (&FlavorList{Provider: "docker", Version: "v1.14.0"}).RenderFlavors(&out, &errOut, output.Text); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || errOut.String() != "docker v1.14.0 publishes no cluster templates\n" {
		t.Errorf("no flavors: stdout %q, stderr %q", out.String(), errOut.String())
	}
}

func TestResultRenderVariableNames(t *testing.T) {
	r := &Result{Variables: []variables.Variable{{Name: "B"}, {Name: "A", Required: true}}}
	var b bytes.Buffer
	if err := r.RenderVariableNames(&b, output.Text); err != nil {
		t.Fatal(err)
	}
	if want := "Variables:\n  - A\n  - B\n"; b.String() != want {
		t.Errorf("text: %q, want %q", b.String(), want)
	}
	b.Reset()
	if err := (&Result{}).RenderVariableNames(&b, output.Text); err != nil || b.String() != "\n" {
		t.Errorf("no variables: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := r.RenderVariableNames(&b, output.YAML); err != nil || b.String() != "variables:\n- A\n- B\n" {
		t.Errorf("yaml: %q, %v", b.String(), err)
	}
}
