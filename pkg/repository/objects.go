package repository

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/userinput"
)

// DocumentError is a document of a template or manifest that is not a Kubernetes object in YAML.
type DocumentError struct {
	Source   string // file or URL
	Document int    // 1-based index among the documents of the text
	Line     int    // 1-based line in the whole text
	Msg      string
}

func (e *DocumentError) Error() string {
	return fmt.Sprintf("%s: document %d (line %d): %s", e.Source, e.Document, e.Line, e.Msg)
}

// ParseObjects splits a multi-document YAML text on `---` lines and parses each document into an
// object, keeping the order. Empty documents (blank or comments only) are skipped.
func ParseObjects(name string, data []byte) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	for i, d := range SplitDocuments(data) {
		if isBlank(d.Text) {
			continue
		}
		j, err := userinput.YAMLToJSON(d.Text)
		if err != nil {
			line, msg := yamlErrorLine(err, d.Line)
			return nil, &DocumentError{Source: name, Document: i + 1, Line: line, Msg: "not valid YAML: " + msg}
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(j, &obj); err != nil {
			return nil, &DocumentError{Source: name, Document: i + 1, Line: d.Line, Msg: "not a YAML object (a Kubernetes object with apiVersion and kind was expected)"}
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, &DocumentError{Source: name, Document: i + 1, Line: d.Line, Msg: "the object has no apiVersion or kind"}
		}
		out = append(out, u)
	}
	return out, nil
}

func isBlank(b []byte) bool {
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}
