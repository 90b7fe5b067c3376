package templates

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/capctl/capctl/internal/output"
)

// This file holds the views of generate's answers (the flavors, the variables, the objects), so
// that cmd only calls them.

// RenderFlavors prints the flavors one a line, the default template as "(default)", or the list
// as data when f is structured. An empty list is said on errOut, so stdout stays empty.
func (fl *FlavorList) RenderFlavors(out, errOut io.Writer, f output.Format) error {
	return output.Render(out, f, fl, func(w io.Writer) error {
		if len(fl.Flavors) == 0 {
			_, err := fmt.Fprintf(errOut, "%s %s publishes no cluster templates\n", fl.Provider, fl.Version)
			return err
		}
		for _, fv := range fl.Flavors {
			if fv == "" {
				fv = "(default)"
			}
			if _, err := fmt.Fprintln(w, fv); err != nil {
				return err
			}
		}
		return nil
	})
}

// Render prints clusterctl's --list-variables layout: required names, then optional names with
// their defaults (built-ins show the value generation uses), or the listing as data when f is
// structured.
func (l *VariableListing) Render(w io.Writer, f output.Format) error {
	return output.Render(w, f, l, l.writeText)
}

func (l *VariableListing) writeText(w io.Writer) error {
	if len(l.Required) > 0 {
		fmt.Fprintln(w, "Required Variables:")
		for _, n := range l.Required {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	if len(l.Optional) > 0 {
		fmt.Fprintln(w, "\nOptional Variables:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.FilterHTML)
		for _, v := range l.Optional {
			fmt.Fprintf(tw, "  - %s\t(defaults to %s)\n", v.Name, v.Default)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// RenderVariableNames prints `generate yaml --list-variables`: every variable of the template,
// required or not, sorted (clusterctl's layout), or {"variables": [...]} when f is structured.
func (r *Result) RenderVariableNames(w io.Writer, f output.Format) error {
	names := make([]string, 0, len(r.Variables))
	for _, v := range r.Variables {
		names = append(names, v.Name)
	}
	sort.Strings(names)
	return output.Render(w, f, map[string][]string{"variables": names}, func(w io.Writer) error {
		if len(names) == 0 {
			_, err := fmt.Fprintln(w)
			return err
		}
		fmt.Fprintln(w, "Variables:")
		for _, n := range names {
			fmt.Fprintf(w, "  - %s\n", n)
		}
		return nil
	})
}
