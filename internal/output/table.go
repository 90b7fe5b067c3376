package output

import (
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Table is the one table style of capctl: kubectl's borderless look (upper-case headers, columns
// separated by three spaces, no trailing blanks). Widths count what a terminal shows, so cells
// coloured with ANSI codes stay aligned. Rows are buffered until Flush.
type Table struct {
	w    io.Writer
	rows [][]string
}

// columnGap separates columns, as kubectl's printers do.
const columnGap = "   "

// NewTable starts a table with the given header.
func NewTable(w io.Writer, header ...string) *Table {
	t := &Table{w: w}
	t.add(header)
	return t
}

// Row adds one row; tabs and line breaks in cells become spaces so they cannot break the columns.
func (t *Table) Row(cells ...string) { t.add(cells) }

// Rows is how many rows (header excluded) were added.
func (t *Table) Rows() int { return len(t.rows) - 1 }

var cellCleaner = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ")

func (t *Table) add(cells []string) {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = cellCleaner.Replace(c)
	}
	t.rows = append(t.rows, clean)
}

// ansi matches the colour (SGR) and other CSI escape sequences, which take no room on screen.
var ansi = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

// visibleWidth is how many columns s takes on a terminal.
func visibleWidth(s string) int { return utf8.RuneCountInString(ansi.ReplaceAllString(s, "")) }

// Flush prints the table.
func (t *Table) Flush() error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(c))
		}
	}
	var out strings.Builder
	for _, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			if i > 0 {
				line.WriteString(columnGap)
			}
			line.WriteString(c)
			if i < len(r)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-visibleWidth(c)))
			}
		}
		out.WriteString(strings.TrimRight(line.String(), " "))
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
