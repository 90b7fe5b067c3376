// Package redact is the one rule for which names hold secrets (tokens, passwords, keys,
// credentials), so that logging, `config variables` and error messages never print their values.
// It imports nothing of capctl, so the logger and the config reader both build on it.
package redact

import "strings"

// Mask replaces a secret value wherever one would be printed.
const Mask = "<redacted>"

// sensitiveMarkers are name fragments that mark a variable as a secret. Matching is on the
// upper-cased name so `github-token` and `GITHUB_TOKEN` are both caught.
var sensitiveMarkers = []string{
	"TOKEN", "PASSWORD", "PASSWD", "SECRET", "_KEY", "CREDENTIAL", "B64ENCODED", "PRIVATE", "CERT_DATA",
}

// IsSensitive reports whether a variable's value must never be printed or logged.
func IsSensitive(name string) bool {
	n := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if strings.HasSuffix(n, "KEY") || strings.HasPrefix(n, "KEY_") {
		return true
	}
	for _, m := range sensitiveMarkers {
		if strings.Contains(n, m) {
			return true
		}
	}
	return false
}

// Value returns value, or Mask when name suggests a secret.
func Value(name, value string) string {
	if IsSensitive(name) {
		return Mask
	}
	return value
}
