package plugin

import (
	"bytes"
	"strings"
	"testing"

	"github.com/capctl/capctl/internal/output"
)

func TestRenderList(t *testing.T) {
	var b bytes.Buffer
	if err := RenderList(&b, output.Text, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "No plugins found:") {
		t.Errorf("no plugins: %q", b.String())
	}
	entries := []Entry{{Path: "/bin/capctl-foo", Command: "foo"}, {Path: "/usr/bin/clusterctl-foo", Command: "foo", Warnings: []string{"shadowed by /bin/capctl-foo", "not executable"}}}
	b.Reset()
	if err := RenderList(&b, output.Text, entries); err != nil {
		t.Fatal(err)
	}
	want := "COMMAND      PATH                      WARNING\n" +
		"capctl foo   /bin/capctl-foo\n" +
		"capctl foo   /usr/bin/clusterctl-foo   shadowed by /bin/capctl-foo; not executable\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := RenderList(&b, output.JSON, entries[:1]); err != nil {
		t.Fatal(err)
	}
	if want := "[\n  {\n    \"path\": \"/bin/capctl-foo\",\n    \"command\": \"foo\"\n  }\n]\n"; b.String() != want {
		t.Errorf("json: %q", b.String())
	}
}
