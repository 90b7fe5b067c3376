package conversion

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/v1beta1set"
	"github.com/capctl/capctl/pkg/repository"
)

// convertTestdata reads a test set of the convert command's tests.
func convertTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "convert", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip converts every convertible object of the test sets to v1beta2 and back and
// compares with the input: nothing differs but the reported fields and the documented normal
// forms (durations written as Go durations, references carrying the object's namespace).
func TestRoundTrip(t *testing.T) {
	sets := map[string][]byte{"classic-v1beta1.yaml": convertTestdata(t, "classic-v1beta1.yaml")}
	for _, name := range v1beta1set.Templates {
		sets[name] = v1beta1set.Render(t, name)
	}
	n := 0
	for name, data := range sets {
		for _, d := range repository.SplitDocuments(data) {
			raw, err := sigsyaml.YAMLToJSON(d.Text)
			if err != nil {
				t.Fatal(err)
			}
			in, err := decodeJSON(raw)
			if err != nil || !convertible(gvkOf(in)) {
				continue
			}
			n++
			res, err := convertObject(in)
			if err != nil {
				t.Fatalf("%s line %d: %v", name, d.Line, err)
			}
			if got := res.Out["apiVersion"]; !strings.HasSuffix(got.(string), "/v1beta2") {
				t.Errorf("%s line %d: apiVersion %v", name, d.Line, got)
			}
			// The public ConvertBack, with the versions the input's references used.
			versions := refVersions(gvkOf(in).GroupKind(), in)
			back, err := ConvertBack(res.Out, gvkOf(in).Version, versions)
			if err != nil {
				t.Fatalf("%s line %d: back: %v", name, d.Line, err)
			}
			if diff := lost(in, back, nil); !reflect.DeepEqual(diff, res.Warnings) {
				t.Errorf("%s line %d %v: round trip loses %q, reported %q", name, d.Line, gvkOf(in).Kind, diff, res.Warnings)
			}
			for _, extra := range lost(back, in, nil) {
				if !strings.HasSuffix(strings.SplitN(extra, ":", 2)[0], "Ref.namespace") {
					t.Errorf("%s line %d %v: round trip adds %s", name, d.Line, gvkOf(in).Kind, extra)
				}
			}
		}
	}
	if n < 15 {
		t.Errorf("only %d objects round-tripped; the test sets should have at least 15", n)
	}
}

// TestOtherKindsRoundTrip: the hub's status moves (Machine, KubeadmConfig), the IPAM and runtime
// groups' older versions each convert back to their input (no unreported loss).
func TestOtherKindsRoundTrip(t *testing.T) {
	in := convertTestdata(t, "other-kinds.yaml")
	for _, d := range repository.SplitDocuments(in) {
		raw, _ := sigsyaml.YAMLToJSON(d.Text)
		o, err := decodeJSON(raw)
		if err != nil || !convertible(gvkOf(o)) {
			continue
		}
		res, err := convertObject(o)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ConvertBack(res.Out, gvkOf(o).Version, refVersions(gvkOf(o).GroupKind(), o))
		if err != nil {
			t.Fatal(err)
		}
		if l := lost(o, back, nil); len(l) > 0 {
			t.Errorf("%s: round trip loses %q", gvkOf(o).Kind, l)
		}
	}
}
