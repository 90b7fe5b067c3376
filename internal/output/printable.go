package output

import (
	"fmt"
	"strings"
	"unicode"
)

// Printable is s with every control character (C0, DEL, C1) and every bidirectional override
// written as a visible escape (\x1b, \u202e): text read from the cluster or a file that a terminal
// would otherwise obey (move the cursor, recolour, reorder a line) is shown, not run.
func Printable(s string) string {
	if strings.IndexFunc(s, unsafeRune) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
