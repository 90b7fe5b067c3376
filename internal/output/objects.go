package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ObjectsYAML renders Kubernetes objects as clusterctl prints them: each object marshalled (keys
// sorted), documents joined by `---` lines, ending with a newline. Provider components and
// cluster templates are printed through it.
func ObjectsYAML(objs []unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for i, o := range objs {
		y, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("marshalling %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// ObjectsJSON renders Kubernetes objects as one indented v1 List, as kubectl does for -o json.
func ObjectsJSON(objs []unstructured.Unstructured) ([]byte, error) {
	items := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		items = append(items, o.Object)
	}
	b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteObjects prints objects as YAML documents (one v1 List when f is JSON) on out, or, when
// path is set and not "-", into a file that is 0600 before its first byte (templates may hold
// credentials), then says on errOut how many objects it wrote there.
func WriteObjects(out, errOut io.Writer, objs []unstructured.Unstructured, f Format, path string) error {
	var b []byte
	var err error
	if f == JSON {
		b, err = ObjectsJSON(objs)
	} else {
		b, err = ObjectsYAML(objs)
	}
	if err != nil {
		return err
	}
	if path == "" || path == "-" {
		_, err = out.Write(b)
		return err
	}
	if err := WritePrivateFile(path, b); err != nil {
		return err
	}
	_, err = fmt.Fprintf(errOut, "Wrote %d objects to %s\n", len(objs), path)
	return err
}
