package deletion

import (
	"fmt"
	"io"
	"strings"

	"github.com/capctl/capctl/internal/output"
)

// Report is the -o json|yaml document of `capctl delete`: the plan and, unless a dry run, the
// result.
type Report struct {
	Plan   *Plan   `json:"plan"`
	Result *Result `json:"result,omitempty"`
}

// RenderPlan prints one row per provider (what goes, what stays), the objects per kind,
// cert-manager's fate and any warnings.
func RenderPlan(w io.Writer, plan *Plan) error {
	t := output.NewTable(w, "PROVIDER", "TYPE", "VERSION", "NAMESPACE", "OBJECTS TO DELETE", "CRDS")
	for _, pp := range plan.Providers {
		crds := "kept"
		if n := len(pp.KeptCRDs); n > 0 {
			crds = fmt.Sprintf("%d kept", n)
		}
		nCRD := 0
		for _, o := range pp.Delete {
			if o.Kind == "CustomResourceDefinition" {
				nCRD++
			}
		}
		if nCRD > 0 {
			crds = fmt.Sprintf("%d deleted", nCRD)
		}
		ns := pp.Namespace + " (kept)"
		if pp.NamespaceDeleted {
			ns = pp.Namespace + " (deleted with all its contents)"
		}
		t.Row(pp.Provider.ManifestLabel(), string(pp.Provider.Type), pp.Provider.Version, ns, kindCounts(pp.Delete), crds)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if plan.CertManager.Deleted {
		fmt.Fprintf(w, "cert-manager: deleted (%s)\n", kindCounts(plan.CertManager.Delete))
	} else {
		fmt.Fprintf(w, "cert-manager: %s\n", plan.CertManager.Reason)
	}
	for _, pp := range plan.Providers {
		for _, o := range pp.KeptClusterScoped {
			fmt.Fprintf(w, "kept %s: %s has several instances and the name is not prefixed with its namespace\n", o, pp.Provider.ManifestLabel())
		}
	}
	if len(plan.Remaining) > 0 {
		var s []string
		for _, p := range plan.Remaining {
			s = append(s, p.Namespace+"/"+p.ManifestLabel())
		}
		fmt.Fprintf(w, "Providers that stay installed: %s\n", strings.Join(s, ", "))
	}
	for _, warn := range plan.Warnings {
		fmt.Fprintf(w, "Warning: %s\n", warn)
	}
	return nil
}

// WriteText prints the providers whose inventory entry Apply removed and, when the plan deleted
// it and Apply returned no error (runErr), cert-manager. A report without a result (Apply
// stopped before deleting) prints nothing.
func (r *Report) WriteText(w io.Writer, runErr error) error {
	if r.Result == nil {
		return nil
	}
	for _, p := range r.Result.InventoryRemoved {
		fmt.Fprintf(w, "Deleted provider %s %s from namespace %s\n", p.ManifestLabel(), p.Version, p.Namespace)
	}
	if r.Plan.CertManager.Deleted && runErr == nil {
		fmt.Fprintln(w, "Deleted cert-manager")
	}
	return nil
}

// WriteCounts prints how many objects were deleted and how many had already gone (res may be
// nil: nothing was deleted, nothing is printed).
func (res *Result) WriteCounts(w io.Writer) error {
	if res == nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "%d object(s) deleted, %d already gone\n", res.Deleted, res.AlreadyGone)
	return err
}

// kindCounts summarises objects as "Deployment 1, Service 2" in deletion order of first appearance.
func kindCounts(objs []Object) string {
	if len(objs) == 0 {
		return "none"
	}
	counts := map[string]int{}
	var order []string
	for _, o := range objs {
		if counts[o.Kind] == 0 {
			order = append(order, o.Kind)
		}
		counts[o.Kind]++
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}
