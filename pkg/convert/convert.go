package convert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/internal/userinput"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/repository"
)

// Request is one convert run.
type Request struct {
	// Paths are files or directories (every *.yaml and *.yml below it, hidden folders skipped);
	// "-" (or no path) reads Stdin.
	Paths []string
	Stdin io.Reader
	// ToVersion is the target version; only v1beta2 (the default) is accepted.
	ToVersion string
	// InPlace writes each changed file back (mode kept, atomically) once every file converted.
	InPlace bool
	// DryRun converts and reports, writing nothing.
	DryRun bool
	// OutputFile, for one input, is the file (created 0600: converted objects may hold secrets,
	// files in a KubeadmConfig) the conversion is written to; empty leaves it in the report.
	OutputFile string
}

// Report is what a run did (or, with DryRun, would do).
type Report struct {
	Files []*FileReport `json:"files"`
	// Written lists the files rewritten in place.
	Written []string `json:"written,omitempty"`
}

// FileReport is one input file.
type FileReport struct {
	Path    string                    `json:"path"`
	Objects []conversion.ObjectReport `json:"objects"`
	// Changed is true when at least one object was converted.
	Changed bool `json:"changed"`
	// Output is the converted text (the input, byte for byte, when nothing changed).
	Output []byte `json:"-"`
	// Input is the text read.
	Input []byte `json:"-"`
}

// Counts returns how many objects were converted and how many were copied unchanged.
func (r *Report) Counts() (converted, unchanged int) {
	for _, f := range r.Files {
		for _, o := range f.Objects {
			if o.Action == conversion.Converted {
				converted++
			} else if o.Error == "" {
				unchanged++
			}
		}
	}
	return converted, unchanged
}

// Warnings counts the warnings of all objects.
func (r *Report) Warnings() int {
	n := 0
	for _, f := range r.Files {
		for _, o := range f.Objects {
			n += len(o.Warnings)
		}
	}
	return n
}

// ObjectsError is returned when objects could not be converted; it lists every one of them.
type ObjectsError struct{ Failures []string }

func (e *ObjectsError) Error() string {
	return fmt.Sprintf("%d object(s) could not be converted (nothing was written):\n  %s", len(e.Failures), strings.Join(e.Failures, "\n  "))
}

// Validate checks a request before any file is read.
func (r *Request) Validate() error {
	if r.ToVersion == "" {
		r.ToVersion = conversion.TargetVersion
	}
	if r.ToVersion != conversion.TargetVersion {
		return fmt.Errorf("--to-version %q is not supported: the only target version is %s", r.ToVersion, conversion.TargetVersion)
	}
	if r.InPlace && r.DryRun {
		return errors.New("--in-place and --dry-run exclude each other: --dry-run shows what --in-place would write")
	}
	if r.OutputFile != "" && (len(r.Paths) > 1 || r.InPlace || r.DryRun) {
		return errors.New("-o/--output takes the conversion of one input; for several files or a directory use --in-place")
	}
	for _, p := range r.Paths {
		if p == "-" {
			if r.InPlace {
				return errors.New("--in-place needs files or directories, not standard input")
			}
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if st.IsDir() && !r.InPlace && !r.DryRun {
			return fmt.Errorf("%s is a directory: convert it with --in-place (rewrite every *.yaml) or look first with --dry-run", p)
		}
	}
	if len(r.Paths) > 1 && !r.InPlace && !r.DryRun {
		for _, p := range r.Paths {
			if p == "-" {
				return errors.New("standard input cannot be combined with other paths")
			}
		}
	}
	return nil
}

// Run converts the request's files. With InPlace it writes changed files only when every object
// of every file converted; otherwise it writes nothing and returns an *ObjectsError with the report.
func Run(ctx context.Context, _ env.Env, req Request) (*Report, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	paths := req.Paths
	if len(paths) == 0 {
		paths = []string{"-"}
	}
	files, err := userinput.ExpandPaths(paths)
	if err != nil {
		return nil, err
	}
	rep := &Report{}
	var failures []string
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := userinput.ReadPath(ctx, p, req.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		name := p
		if p == "-" {
			name = "(stdin)"
		}
		fr := ConvertText(name, data)
		rep.Files = append(rep.Files, fr)
		for _, o := range fr.Objects {
			if o.Error != "" {
				failures = append(failures, fmt.Sprintf("%s:%d %s: %s", name, o.Line, o.Object(), o.Error))
			}
		}
	}
	if len(failures) > 0 {
		return rep, &ObjectsError{Failures: failures}
	}
	if req.InPlace {
		for _, f := range rep.Files {
			if !f.Changed {
				continue
			}
			if err := replaceFile(f.Path, f.Output); err != nil {
				return rep, fmt.Errorf("writing %s (files before it in the report were written): %w", f.Path, err)
			}
			rep.Written = append(rep.Written, f.Path)
		}
	}
	if req.OutputFile != "" {
		if err := output.WritePrivateFile(req.OutputFile, rep.Files[0].Output); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// replaceFile writes data over path atomically, keeping the file's mode.
func replaceFile(path string, data []byte) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return output.WriteFileAtomic(path, data, st.Mode().Perm())
}

// ConvertText converts every document of one multi-document YAML text. Documents that are not
// converted keep their bytes, as do the separators between documents.
func ConvertText(name string, data []byte) *FileReport {
	fr := &FileReport{Path: name, Input: data}
	docs := repository.SplitDocuments(data)
	texts := make([][]byte, len(docs))
	for i, d := range docs {
		text, reps := convertDocument(d.Text, d.Line)
		for _, rep := range reps {
			fr.Objects = append(fr.Objects, rep)
			if rep.Action == conversion.Converted {
				fr.Changed = true
			}
		}
		texts[i] = text
	}
	fr.Output = data
	if fr.Changed {
		fr.Output = joinDocuments(data, docs, texts)
	}
	return fr
}

// joinDocuments writes texts in the place of docs, keeping the separator lines between them
// (the line just before each document after the first, which SplitDocuments dropped).
func joinDocuments(data []byte, docs []repository.Document, texts [][]byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	n := 0
	for _, t := range texts {
		n += len(t)
	}
	var out bytes.Buffer
	out.Grow(n + len(docs)*8)
	for i, d := range docs {
		if i > 0 {
			out.Write(lines[d.Line-2])
		}
		out.Write(texts[i])
	}
	return out.Bytes()
}

// convertDocument converts one document (one object, or a v1 List of objects as kubectl get -o
// yaml writes); it returns the text to write and a report per object.
func convertDocument(text []byte, line int) ([]byte, []conversion.ObjectReport) {
	raw, err := userinput.YAMLToJSON(text)
	var dup *userinput.DuplicateKeyError
	if errors.As(err, &dup) {
		d := *dup
		d.Line += line - 1 // the line in the file, not in the document
		return text, []conversion.ObjectReport{{Line: line, Kind: "?", Action: conversion.NotCAPI, Error: d.Error()}}
	}
	if err != nil {
		return text, []conversion.ObjectReport{{Line: line, Kind: "?", Action: conversion.NotCAPI, Error: "not valid YAML: " + err.Error()}}
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		// Only comments or blank lines.
		return text, nil
	}
	obj, err := conversion.Decode(raw)
	if err != nil {
		// Not a mapping (a list or a scalar): nothing to convert.
		return text, []conversion.ObjectReport{{Line: line, Kind: "?", Action: conversion.NotCAPI}}
	}
	var reps []conversion.ObjectReport
	changed := false
	if items, ok := obj["items"].([]any); ok && obj["apiVersion"] == "v1" && strings.HasSuffix(fmt.Sprint(obj["kind"]), "List") {
		for i, it := range items {
			m, ok := it.(map[string]any)
			if !ok {
				continue
			}
			out, rep := convertItem(m, line, text)
			if rep.Action == conversion.Converted {
				items[i], changed = out, true
			}
			reps = append(reps, rep)
		}
	} else {
		out, rep := convertItem(obj, line, text)
		obj, changed = out, rep.Action == conversion.Converted
		reps = append(reps, rep)
	}
	if !changed {
		return text, reps
	}
	var node yaml.Node
	var input *yaml.Node
	if err := yaml.Unmarshal(text, &node); err == nil {
		input = &node
	}
	b, err := render(obj, input, compactSequences(text))
	if err != nil {
		for i := range reps {
			if reps[i].Action == conversion.Converted {
				reps[i].Action, reps[i].To, reps[i].Error = conversion.PassedThrough, reps[i].From, "writing the converted object: "+err.Error()
			}
		}
		return text, reps
	}
	return b, reps
}

// convertItem converts one object of a document at line (conversion.Decoded), hinting at
// unrendered variables when it fails.
func convertItem(obj map[string]any, line int, text []byte) (map[string]any, conversion.ObjectReport) {
	out, rep := conversion.Decoded(obj)
	rep.Line = line
	if rep.Error != "" {
		rep.Error += hintVariables(text)
	}
	return out, rep
}

// hintVariables adds a hint when a document still holds ${VAR} placeholders.
func hintVariables(text []byte) string {
	if bytes.Contains(text, []byte("${")) {
		return " (the document still has ${...} variables: render it first, e.g. with capctl generate yaml)"
	}
	return ""
}
