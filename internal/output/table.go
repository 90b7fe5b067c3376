package output

import (
	"bytes"
	"io"
	"strings"
	"text/tabwriter"
)

// Table is the one table style of capctl: kubectl's borderless look (upper-case headers, columns
// separated by three spaces, no trailing blanks). Rows are buffered until Flush.
type Table struct {
	w    io.Writer
	buf  bytes.Buffer
	tw   *tabwriter.Writer
	rows int
}

// NewTable starts a table with the given header.
func NewTable(w io.Writer, header ...string) *Table {
	t := &Table{w: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 4, 3, ' ', 0)
	t.write(header)
	return t
}

// Row adds one row; tabs and line breaks in cells become spaces so they cannot break the columns.
func (t *Table) Row(cells ...string) {
	t.write(cells)
	t.rows++
}

// Rows is how many rows (header excluded) were added.
func (t *Table) Rows() int { return t.rows }

func (t *Table) write(cells []string) {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ").Replace(c)
	}
	t.tw.Write([]byte(strings.Join(clean, "\t") + "\n"))
}

// Flush prints the table.
func (t *Table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(t.buf.String(), "\n") {
		if line == "" {
			continue
		}
		out.WriteString(strings.TrimRight(line, " \n"))
		out.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, out.String())
	return err
}

// WriteTable prints header and rows as one table.
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	t := NewTable(w, header...)
	for _, r := range rows {
		t.Row(r...)
	}
	return t.Flush()
}
