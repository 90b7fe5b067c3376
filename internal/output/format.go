package output

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// Format is an output format named by -o/--output.
type Format string

// The formats every command with -o accepts. Text, the default, is for people; JSON and YAML are
// one document for programs.
const (
	Text Format = "text"
	JSON Format = "json"
	YAML Format = "yaml"
	// Short is an extra format only `version` accepts (clusterctl's `version -o short`).
	Short Format = "short"
)

// Common is the vocabulary of every -o flag.
var Common = []Format{Text, JSON, YAML}

// Structured reports whether f is one document for programs (json or yaml).
func (f Format) Structured() bool { return f == JSON || f == YAML }

// WriteStructured prints v as indented JSON or as YAML: every command's machine-readable output
// has the same shape (JSON indented by two spaces, a trailing newline).
func WriteStructured(w io.Writer, f Format, v any) error {
	var (
		b   []byte
		err error
	)
	switch f {
	case JSON:
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	case YAML:
		b, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("unsupported structured output format %q: use json or yaml", f)
	}
	if err != nil {
		return fmt.Errorf("rendering %s output: %w", f, err)
	}
	_, err = w.Write(b)
	return err
}

// Render prints v as one JSON or YAML document when f is structured, else calls text: the one
// switch between people's and programs' output.
func Render(w io.Writer, f Format, v any, text func(io.Writer) error) error {
	if f.Structured() {
		return WriteStructured(w, f, v)
	}
	return text(w)
}
