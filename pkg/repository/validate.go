package repository

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/capctl/capctl/pkg/config"
	"github.com/capctl/capctl/pkg/variables"
)

// ErrHTML is returned (wrapped) when a server answered a file request with an HTML page: a
// proxy's login page, a captive portal, an error page of the code host.
var ErrHTML = errors.New("HTML page instead of the file")

// htmlError says that data is an HTML page and not file.
type htmlError struct{ file string }

func (e *htmlError) Error() string {
	return fmt.Sprintf("the server returned an HTML page, not %s (a proxy's login page or an error page?)", e.file)
}

func (e *htmlError) Unwrap() error { return ErrHTML }

// looksLikeHTML tells whether data is an HTML document. No YAML file of a release starts with
// '<', so the first characters decide.
func looksLikeHTML(data []byte) bool {
	head := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(head) == 0 || head[0] != '<' {
		return false
	}
	if len(head) > 1024 {
		head = head[:1024]
	}
	head = bytes.ToLower(head)
	for _, tag := range []string{"<!doctype html", "<html", "<head", "<body", "<title"} {
		if bytes.Contains(head, []byte(tag)) {
			return true
		}
	}
	return false
}

// validateFile checks that data is a plausible file of a release before it is cached: not an
// HTML page, not empty; metadata.yaml must parse as metadata, other YAML files as YAML (raw, or
// once every variable has a value, for files that are only YAML after substitution).
func validateFile(file string, data []byte) error {
	if looksLikeHTML(data) {
		return &htmlError{file: file}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return fmt.Errorf("%s is empty", file)
	}
	switch {
	case path.Base(file) == MetadataFile:
		_, err := ParseMetadata(data)
		return err
	case strings.HasSuffix(file, ".yaml") || strings.HasSuffix(file, ".yml"):
		err := yamlDocumentsError(data)
		if err == nil {
			return nil
		}
		filled, perr := variables.Process(data, func(string) (string, bool) { return "x", true })
		if perr == nil && yamlDocumentsError(filled) == nil {
			return nil
		}
		return err
	}
	return nil
}

// yamlDocumentsError is the first syntax error of a multi-document YAML text, with its line.
func yamlDocumentsError(data []byte) error {
	for _, d := range SplitDocuments(data) {
		if _, err := yaml.YAMLToJSON(d.Text); err != nil {
			return errors.New(yamlErrorAt(err, d.Line))
		}
	}
	return nil
}

// ParseMetadata decodes and validates metadata.yaml as clusterctl v1.14 does. Errors say what is
// wrong in the file's own terms (a field, a line), never in Go's.
func ParseMetadata(data []byte) (*Metadata, error) {
	if looksLikeHTML(data) {
		return nil, &htmlError{file: MetadataFile}
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, errors.New(yamlErrorAt(err, 1))
	}
	var top any
	if err := json.Unmarshal(j, &top); err != nil {
		return nil, fmt.Errorf("metadata is not readable: %v", err)
	}
	if _, ok := top.(map[string]any); !ok {
		return nil, fmt.Errorf("metadata is not a YAML mapping but %s; a metadata.yaml has apiVersion: %s, kind: Metadata and releaseSeries", jsonKind(top), metadataAPIVersion)
	}
	// Unknown fields are tolerated (future additions); fields of the wrong type are not.
	var m Metadata
	if err := json.Unmarshal(j, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("metadata field %s must be %s, not %s", jsonFieldPath(top, te.Field), typeWord(te.Type), articled(te.Value))
		}
		return nil, fmt.Errorf("metadata is not readable: %v", err)
	}
	if m.APIVersion != metadataAPIVersion {
		return nil, fmt.Errorf("metadata apiVersion is %q, want %q", m.APIVersion, metadataAPIVersion)
	}
	if m.Kind != "" && m.Kind != "Metadata" {
		return nil, fmt.Errorf("metadata kind is %q, want Metadata", m.Kind)
	}
	if len(m.ReleaseSeries) == 0 {
		return nil, errors.New("metadata lists no releaseSeries")
	}
	return &m, nil
}

// jsonFieldPath turns encoding/json's dotted field ("releaseSeries.major") into a path with the
// list index of the first entry that has the bad value ("releaseSeries[0].major").
func jsonFieldPath(top any, field string) string {
	parts := strings.Split(field, ".")
	var out []string
	cur := top
	for i, p := range parts {
		m, ok := cur.(map[string]any)
		if !ok {
			out = append(out, parts[i:]...)
			break
		}
		cur = m[p]
		if list, ok := cur.([]any); ok && i+1 < len(parts) {
			idx := 0
			for j, e := range list {
				if em, ok := e.(map[string]any); ok {
					if _, bad := em[parts[i+1]].(float64); !bad {
						idx = j
						break
					}
				}
			}
			out = append(out, fmt.Sprintf("%s[%d]", p, idx))
			if len(list) > 0 {
				cur = list[idx]
			}
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ".")
}

func typeWord(t reflect.Type) string { return config.KindOfGoType(t.String()) }

// articled names a JSON value kind as encoding/json reports it ("string", "object", "number -1").
func articled(v string) string {
	switch {
	case v == "object":
		return "a mapping"
	case v == "array":
		return "a list"
	case strings.HasPrefix(v, "number"):
		return "a number (" + strings.TrimSpace(strings.TrimPrefix(v, "number")) + ")"
	case v == "bool":
		return "true or false"
	}
	return "a " + v
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "empty"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	case []any:
		return "a list"
	}
	return "something else"
}
