package main

import (
	"io"

	"github.com/capctl/capctl/internal/output"
)

// writeStructured prints v as JSON or YAML through internal/output, for the commands whose -o is
// still a plain string; new code uses output.WriteStructured or output.Render directly.
func writeStructured(w io.Writer, format string, v any) error {
	return output.WriteStructured(w, output.Format(format), v)
}

// writePlainTable prints a table in the one table style (internal/output).
func writePlainTable(w io.Writer, header []string, rows [][]string) {
	_ = output.WriteTable(w, header, rows)
}
