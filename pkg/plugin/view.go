package plugin

import (
	"io"
	"strings"

	"github.com/capctl/capctl/internal/output"
)

// RenderList prints the plugins List found as a table (COMMAND, PATH, WARNING), a hint on how to
// add one when there is none, or the entries as data when f is structured.
func RenderList(w io.Writer, f output.Format, entries []Entry) error {
	return output.Render(w, f, entries, func(w io.Writer) error {
		if len(entries) == 0 {
			_, err := io.WriteString(w, "No plugins found: put an executable named capctl-NAME or clusterctl-NAME on PATH.\n")
			return err
		}
		t := output.NewTable(w, "COMMAND", "PATH", "WARNING")
		for _, e := range entries {
			t.Row("capctl "+e.Command, e.Path, strings.Join(e.Warnings, "; "))
		}
		return t.Flush()
	})
}
