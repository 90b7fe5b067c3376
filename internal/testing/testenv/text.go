package testenv

import "strings"

// Squeeze collapses the runs of spaces of table cells, line by line, so that tests can look for
// a row without depending on the column widths.
func Squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}
