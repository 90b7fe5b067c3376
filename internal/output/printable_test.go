package output

import "testing"

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é and 日本":           "plain text, é and 日本",
		"mallory\x1b]0;owned\x07":        `mallory\x1b]0;owned\x07`,
		"clear\x1b[2J screen":            `clear\x1b[2J screen`,
		"tab\tand\nnewline\r":            `tab\x09and\x0anewline\x0d`,
		"C1 \u009b31m and DEL \x7f":      `C1 \x9b31m and DEL \x7f`,
		"bidi \u202egnp.exe and \u2066x": `bidi \u202egnp.exe and \u2066x`,
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
