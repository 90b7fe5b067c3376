package cutover

import (
	"fmt"
	"io"
	"strings"
)

// RenderText prints the findings, one block each, then what was not checked.
func (r *Report) RenderText(w io.Writer) error {
	var b strings.Builder
	where := "management cluster " + r.ManagementCluster
	if r.ManagementCluster == "" {
		where = "the manifests"
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(&b, "Nothing found in %s that depends on %s.\n", where, Removed)
	} else {
		fmt.Fprintf(&b, "%d finding(s) in %s that depend on %s:\n", len(r.Findings), where, Removed)
		for _, f := range r.Findings {
			fmt.Fprintf(&b, "\n[%s] %s\n  %s\n  fix: %s\n", f.Check, f.Object, f.Message, f.Fix)
		}
	}
	if r.Partial() {
		b.WriteString("\nNot checked (the view is partial):\n")
		for _, n := range r.NotChecked {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
		for _, u := range r.Unread {
			fmt.Fprintf(&b, "  - cannot read %s\n", u.String())
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
