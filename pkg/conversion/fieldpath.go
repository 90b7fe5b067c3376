package conversion

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PathResult is what FieldPath says about a JSON pointer in one kind at one version.
type PathResult int

const (
	// UnknownKind: capctl has no Go type for the kind at that version (another provider's kind):
	// the path is not checked.
	UnknownKind PathResult = iota
	// PathExists: every segment of the pointer names a field, map key, list index or free-form
	// value of the kind's type.
	PathExists
	// PathMissing: some segment names nothing in the kind's type (the error says which).
	PathMissing
)

// FieldPath tells whether the JSON pointer (RFC 6901, as ClusterClass JSON patches write it:
// "/spec/template/spec/...") names a place in gvk's object. The kind's type is the upstream Go
// type capctl converts with, so the answer is the API's own schema for that version: a map
// accepts any key, a list an index or "-", a free-form value (runtime.RawExtension,
// apiextensions JSON, interface{}) anything below it. When the path is missing, the second
// result is the pointer's prefix that still resolves (the deepest field that exists).
func FieldPath(gvk schema.GroupVersionKind, pointer string) (PathResult, string) {
	if !scheme.Recognizes(gvk) {
		return UnknownKind, ""
	}
	obj, err := scheme.New(gvk)
	if err != nil {
		return UnknownKind, ""
	}
	segs, ok := splitPointer(pointer)
	if !ok {
		return PathMissing, ""
	}
	t := reflect.TypeOf(obj)
	for i, seg := range segs {
		next, free, ok := step(t, seg)
		if !ok {
			return PathMissing, joinPointer(segs[:i])
		}
		if free {
			return PathExists, pointer
		}
		t = next
	}
	return PathExists, pointer
}

var (
	rawMessage = reflect.TypeOf(json.RawMessage{})
)

// step is the type one segment below t; free when t (or the segment's value) holds any JSON.
func step(t reflect.Type, seg string) (reflect.Type, bool, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isFreeForm(t) {
		return nil, true, true
	}
	switch t.Kind() {
	case reflect.Struct:
		f, ok := fieldNamed(t, seg)
		if !ok {
			return nil, false, false
		}
		if isFreeForm(f) {
			return f, true, true
		}
		return f, false, true
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, false, false
		}
		return t.Elem(), isFreeForm(t.Elem()), true
	case reflect.Slice, reflect.Array:
		if t == rawMessage {
			return nil, true, true
		}
		if seg != "-" {
			if _, err := strconv.ParseUint(seg, 10, 32); err != nil {
				return nil, false, false
			}
		}
		return t.Elem(), isFreeForm(t.Elem()), true
	case reflect.Interface:
		return nil, true, true
	}
	// A scalar has nothing below it.
	return nil, false, false
}

// isFreeForm tells a type that holds arbitrary JSON: an interface, json.RawMessage, or a struct
// that marshals itself from raw bytes (runtime.RawExtension, apiextensionsv1.JSON).
func isFreeForm(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface || t == rawMessage {
		return true
	}
	if t.Kind() != reflect.Struct {
		return false
	}
	f, ok := t.FieldByName("Raw")
	return ok && f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Uint8 && t.NumField() <= 2
}

// fieldNamed is the type of t's field whose JSON name is name, looking into inlined and embedded
// structs as encoding/json does.
func fieldNamed(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jsonName, opts, _ := strings.Cut(tag, ",")
		inline := strings.Contains(","+opts+",", ",inline,") || (jsonName == "" && f.Anonymous)
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if got, ok := fieldNamed(ft, name); ok {
					return got, true
				}
			}
			continue
		}
		if jsonName == "" {
			jsonName = f.Name
		}
		if jsonName == name {
			return f.Type, true
		}
	}
	return nil, false
}

// splitPointer splits an RFC 6901 pointer into its unescaped segments.
func splitPointer(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs, true
}

// joinPointer is splitPointer's inverse.
func joinPointer(segs []string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/")
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
