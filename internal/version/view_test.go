package version

import (
	"bytes"
	"testing"

	"github.com/capctl/capctl/internal/output"
)

func TestRender(t *testing.T) {
	i := Info{Major: "1", Minor: "2", GitVersion: "v1.2.3", Platform: "linux/amd64"}
	for _, tc := range []struct {
		f    output.Format
		want string
	}{
		{output.Short, "v1.2.3\n"},
		// clusterctl's text format: Go's %#v of the struct.
		{output.Text, `capctl version: version.Info{Major:"1", Minor:"2", GitVersion:"v1.2.3", GitCommit:"", GitTreeState:"", BuildDate:"", GoVersion:"", Compiler:"", Platform:"linux/amd64"}` + "\n"},
		{output.YAML, "capctl:\n  buildDate: \"\"\n  compiler: \"\"\n  gitCommit: \"\"\n  gitTreeState: \"\"\n  gitVersion: v1.2.3\n  goVersion: \"\"\n  major: \"1\"\n  minor: \"2\"\n  platform: linux/amd64\n"},
	} {
		var b bytes.Buffer
		if err := i.Render(&b, tc.f); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.f, b.String(), tc.want)
		}
	}
}
