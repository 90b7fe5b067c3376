package config

import "strings"

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

// Redact returns value, or a fixed mask when name suggests a secret.
func Redact(name, value string) string {
	if IsSensitive(name) {
		return "<redacted>"
	}
	return value
}
