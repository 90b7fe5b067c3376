package conversion

import (
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// keepWritten puts back the empty selectors the user wrote (`selector: {}`, or with every field
// null or empty: `matchLabels: null`) as `selector: {}` where the typed v1beta2 object leaves them
// out when encoded (omitempty/omitzero) and the v1beta2 type has that field. The
// user wrote them for a reason: a MachineDeployment's spec.selector is required by the API
// server's schema, and only the Cluster API defaulting webhook fills it in when it is missing.
func keepWritten(gvk schema.GroupVersionKind, in, out map[string]any) {
	obj, err := scheme.New(gvk)
	if err != nil {
		return
	}
	t := reflect.TypeOf(obj)
	var walk func(inM, outM map[string]any, ft reflect.Type)
	walk = func(inM, outM map[string]any, ft reflect.Type) {
		for k, iv := range inM {
			ftk, ok := jsonField(ft, k)
			if !ok {
				continue
			}
			im, isMap := iv.(map[string]any)
			if !isMap {
				continue
			}
			ov, present := outM[k]
			if !present {
				// Only selectors: other empty objects (metadata: {}) are refused by v1beta2's
				// schemas (minProperties), and converting them away loses nothing.
				if k == "selector" && selectsNothing(im) && structLike(ftk) {
					outM[k] = map[string]any{}
				}
				continue
			}
			if om, ok := ov.(map[string]any); ok {
				walk(im, om, ftk)
			}
		}
	}
	walk(in, out, t)
}

// jsonField is the type of the field of struct type t (through pointers) encoded as name.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")[0]
		if f.Anonymous && tag == "" {
			if ft, ok := jsonField(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// structLike tells whether t (through pointers) encodes as a JSON object.
func structLike(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct || t.Kind() == reflect.Map
}

// selectsNothing tells whether a written selector has no field with a value: every field is
// null, an empty object or an empty list (what the typed object drops when encoded).
func selectsNothing(m map[string]any) bool {
	for _, v := range m {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			if len(x) > 0 {
				return false
			}
		case []any:
			if len(x) > 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}
