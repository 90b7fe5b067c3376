package main

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// writeStructured prints v as indented JSON or as YAML: the one place where `-o json|yaml` is
// rendered, so every command's machine-readable output has the same shape.
func writeStructured(w io.Writer, format string, v any) error {
	var (
		b   []byte
		err error
	)
	switch format {
	case "json":
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	case "yaml":
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unsupported output format %q: use json or yaml", format)
	}
	if err != nil {
		return fmt.Errorf("rendering %s output: %w", format, err)
	}
	_, err = w.Write(b)
	return err
}
