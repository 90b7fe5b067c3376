package contract

import (
	"strings"

	"k8s.io/apimachinery/pkg/version"
)

// LabelPrefix starts the labels with which a provider's CRD declares the contracts it implements
// and, as the value, the CRD versions that implement each: `cluster.x-k8s.io/v1beta2: v1beta2`
// (several versions joined by "_").
const LabelPrefix = "cluster.x-k8s.io/"

// Declared returns the newest contract a CRD's labels declare, or "" when none does.
func Declared(labels map[string]string) string {
	best := ""
	for k := range labels {
		c, ok := strings.CutPrefix(k, LabelPrefix)
		// Only version-shaped keys: cluster.x-k8s.io/provider, .../cluster-name, ... are not contracts.
		if !ok || !isAPIVersion(c) {
			continue
		}
		if best == "" || version.CompareKubeAwareVersionStrings(c, best) > 0 {
			best = c
		}
	}
	return best
}

// NewestDeclared returns the newest contract any of the label sets declares (a provider's CRDs),
// or "" when none does.
func NewestDeclared(labelSets ...map[string]string) string {
	best := ""
	for _, l := range labelSets {
		if c := Declared(l); c != "" && (best == "" || Compare(c, best) > 0) {
			best = c
		}
	}
	return best
}

// isAPIVersion accepts Kubernetes API version names: v1, v1beta2, v2alpha1, ...
func isAPIVersion(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] < '1' || s[1] > '9' {
		return false
	}
	rest := strings.TrimLeft(s[1:], "0123456789")
	for _, p := range []string{"", "alpha", "beta"} {
		if tail, ok := strings.CutPrefix(rest, p); ok && (p == "" && tail == "" || p != "" && tail != "" && strings.Trim(tail, "0123456789") == "") {
			return true
		}
	}
	return false
}

// Compare orders two contracts (API versions: v1alpha4 < v1beta1 < v1beta2 < v1): negative when
// a is older than b, 0 when equal, positive when newer.
func Compare(a, b string) int {
	return version.CompareKubeAwareVersionStrings(a, b)
}
