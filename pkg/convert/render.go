package convert

import (
	"fmt"
	"io"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/conversion"
)

// WriteTable prints one row per Cluster API object (FILE OBJECT FROM → TO WARNINGS), a
// warning per line: the view of a directory, an in-place conversion or a dry run.
func (r *Report) WriteTable(w io.Writer) error {
	var rows [][]string
	for _, f := range r.Files {
		for _, obj := range f.Objects {
			if obj.Action == conversion.NotCAPI && obj.Error == "" {
				continue
			}
			change := obj.From + " → " + obj.To
			if obj.Action != conversion.Converted {
				change += " (" + obj.Action + ")"
			}
			notes := append([]string(nil), obj.Warnings...)
			if obj.Error != "" {
				notes = append([]string{"error: " + obj.Error}, notes...)
			}
			first := ""
			if len(notes) > 0 {
				first = notes[0]
			}
			rows = append(rows, []string{fmt.Sprintf("%s:%d", f.Path, obj.Line), obj.Object(), change, first})
			for _, n := range notes[min(1, len(notes)):] {
				rows = append(rows, []string{"", "", "", n})
			}
		}
	}
	return output.WriteTable(w, []string{"FILE", "OBJECT", "FROM → TO", "WARNINGS"}, rows)
}

// WriteWarnings prints the warnings of a single-file conversion, as
// "Warning: OBJECT (line N): TEXT" (on stderr, beside the converted YAML on stdout).
func (r *Report) WriteWarnings(w io.Writer) error {
	for _, f := range r.Files {
		for _, obj := range f.Objects {
			for _, warn := range obj.Warnings {
				if _, err := fmt.Fprintf(w, "Warning: %s (line %d): %s\n", obj.Object(), obj.Line, warn); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// WriteSummary prints how many resources were (or, in a dry run, would be) converted, passed
// through and warned about, and, in place, how many files were rewritten.
func (r *Report) WriteSummary(w io.Writer, dryRun, inPlace bool) error {
	conv, unchanged := r.Counts()
	verb := "Converted"
	if dryRun {
		verb = "Would convert"
	}
	fmt.Fprintf(w, "%s %d resource(s) to %s. %d resource(s) passed through unchanged.", verb, conv, conversion.TargetVersion, unchanged)
	if n := r.Warnings(); n > 0 {
		fmt.Fprintf(w, " %d warning(s).", n)
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if inPlace {
		if _, err := fmt.Fprintf(w, "Rewrote %d file(s).\n", len(r.Written)); err != nil {
			return err
		}
	}
	return nil
}
