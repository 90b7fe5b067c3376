package convert

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/conversion"
)

// Reading converted objects in the tests: decoded as the conversion decodes them.

func decodeJSON(raw []byte) (map[string]any, error) { return conversion.Decode(raw) }

func gvkOf(obj map[string]any) schema.GroupVersionKind {
	return (&unstructured.Unstructured{Object: obj}).GroupVersionKind()
}

func path(s string) []string { return strings.Split(s, ".") }

func nested(obj map[string]any, p []string) (any, bool) {
	v, ok, err := unstructured.NestedFieldNoCopy(obj, p...)
	return v, ok && err == nil
}

func nestedMap(obj map[string]any, p []string) (map[string]any, bool) {
	v, ok := nested(obj, p)
	m, isMap := v.(map[string]any)
	return m, ok && isMap
}
