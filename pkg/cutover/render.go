package cutover

import (
	"fmt"
	"io"
	"strings"
)

// RenderText prints the findings grouped by check and fix (a v1beta1 management cluster has
// dozens of CRDs with the same fix: it is said once), then what was not checked.
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
		for i := 0; i < len(r.Findings); {
			f := r.Findings[i]
			j := i
			for j < len(r.Findings) && r.Findings[j].Check == f.Check && r.Findings[j].Fix == f.Fix {
				j++
			}
			fmt.Fprintf(&b, "\n[%s]\n", f.Check)
			for _, g := range r.Findings[i:j] {
				fmt.Fprintf(&b, "  %s\n    %s\n", g.Object, g.Message)
			}
			fmt.Fprintf(&b, "  fix: %s\n", f.Fix)
			i = j
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
