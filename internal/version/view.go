package version

import (
	"fmt"
	"io"

	"github.com/capctl/capctl/internal/output"
)

// Render prints the build information as clusterctl's version command does: `capctl version:
// version.Info{…}` (Go's %#v of Info), the version alone for short, or {"capctl": info} as
// data when f is structured.
func (i Info) Render(w io.Writer, f output.Format) error {
	switch f {
	case output.Short:
		_, err := fmt.Fprintln(w, i.GitVersion)
		return err
	case output.JSON, output.YAML:
		return output.WriteStructured(w, f, map[string]Info{"capctl": i})
	}
	_, err := fmt.Fprintf(w, "capctl version: %#v\n", i)
	return err
}
