package userinputtest

import (
	"bytes"
	"fmt"
	"strings"
)

// Line is one line of the large inputs' payload: 84 characters of base64, as a PEM bundle or a
// kubeconfig embedded in a ConfigMap or Secret is written.
const Line = "TUlJQ3lEQ0NBYkNnQXdJQkFnSUJBREFOQmdrcWhraUc5dzBCQVFzRkFEQVZNUk13RVFZRFZRUURFd3ByZFdK"

// Payload returns about n bytes of payload lines, each indented by indent spaces and ended by a
// newline.
func Payload(n, indent int) []byte {
	l := strings.Repeat(" ", indent) + Line + "\n"
	return bytes.Repeat([]byte(l), max(1, n/len(l)))
}

// LargeConfigMap is a ConfigMap of about n bytes whose one data key holds a literal block of
// many lines: a very large object as users keep them (certificate bundles, dashboards).
func LargeConfigMap(namespace, name string, n int) []byte {
	head := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  bundle.pem: |\n", name, namespace)
	return append([]byte(head), Payload(n-len(head), 4)...)
}

// LargeAnnotationValue is a single-line value of about n bytes for an annotation.
func LargeAnnotationValue(n int) string {
	return strings.Repeat(Line, max(1, n/76))
}
