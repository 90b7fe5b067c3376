package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// conversionDataAnnotation is where the upstream conversion webhooks keep v1beta2-only fields of
// an object read at v1beta1; only the hub's ConvertTo (not importable) knows how to restore them.
const conversionDataAnnotation = "cluster.x-k8s.io/conversion-data"

// objectResult is one converted object: the v1beta2 fields and what could not be kept.
type objectResult struct {
	Out      map[string]any
	Warnings []string
}

// convertObject converts one object (decoded with json.Number numbers) from its version to v1beta2.
func convertObject(in map[string]any) (*objectResult, error) {
	gvk := gvkOf(in)
	out, err := typedConvert(in, gvk, gvk.GroupKind().WithVersion(TargetVersion))
	if err != nil {
		return nil, err
	}
	applyHubUp(gvk.GroupKind(), in, out)
	keepWritten(gvk.GroupKind().WithVersion(TargetVersion), in, out)

	// References are written back with the versions the input used, so that the round trip
	// compares like with like (a v1beta2 reference carries no version: the contract resolves it).
	versions := refVersions(gvk.GroupKind(), in)
	back := func(obj map[string]any) (map[string]any, error) {
		return convertBack(obj, gvk.Version, versions)
	}
	baseline, err := back(out)
	if err != nil {
		return nil, fmt.Errorf("converting the result back to %s to check it: %w", gvk.Version, err)
	}
	prune(out, in, nil, baseline, back)

	res := &objectResult{Out: out}
	for _, l := range lost(in, baseline, nil) {
		res.Warnings = append(res.Warnings, l)
	}
	if ann, ok := nestedMap(in, path("metadata.annotations")); ok {
		if _, ok := ann[conversionDataAnnotation]; ok && !restoresConversionData(gvk) {
			res.Warnings = append(res.Warnings, fmt.Sprintf("metadata.annotations[%s]: kept, but the v1beta2 fields stored in it are not restored (only the Cluster API webhooks do that: apply the object and read it back at v1beta2)", conversionDataAnnotation))
		}
	}
	return res, nil
}

// ConvertBack converts a v1beta2 object to version (the round trip's second half). References
// are written with the apiVersion version gives (nil: the Cluster API groups at v1beta1).
func ConvertBack(obj map[string]any, version string, refVersion func(group, kind string) string) (map[string]any, error) {
	if refVersion == nil {
		refVersion = defaultVersionOf
	}
	return convertBack(normalize(obj), version, refVersion)
}

func convertBack(obj map[string]any, version string, refVersion versionOf) (map[string]any, error) {
	gvk := gvkOf(obj)
	out, err := typedConvert(obj, gvk, gvk.GroupKind().WithVersion(version))
	if err != nil {
		return nil, err
	}
	applyHubDown(gvk.GroupKind(), obj, out, refVersion)
	return out, nil
}

// typedConvert decodes in as from, converts it with the scheme's functions and returns the result
// as a map (numbers as json.Number).
func typedConvert(in map[string]any, from, to schema.GroupVersionKind) (map[string]any, error) {
	src, err := scheme.New(from)
	if err != nil {
		return nil, err
	}
	dst, err := scheme.New(to)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, src); err != nil {
		return nil, fmt.Errorf("not a valid %s %s: %w", from.GroupVersion(), from.Kind, err)
	}
	if err := convertTyped(src, dst); err != nil {
		return nil, fmt.Errorf("converting %s to %s: %w", from.GroupVersion(), to.Version, err)
	}
	dst.GetObjectKind().SetGroupVersionKind(to)
	return toMap(dst)
}

// convertTyped uses the types' own hub conversion (ConvertTo/ConvertFrom) where they have one,
// as the provider's conversion webhook would, and the scheme's registered functions otherwise.
// The conversion-data annotation ConvertFrom writes (for the webhook's next round trip) is
// dropped: a file converted back is compared with its input, which does not have it.
func convertTyped(src, dst runtime.Object) error {
	if c, ok := src.(conversion.Convertible); ok {
		if h, ok := dst.(conversion.Hub); ok {
			return c.ConvertTo(h)
		}
	}
	if h, ok := src.(conversion.Hub); ok {
		if c, ok := dst.(conversion.Convertible); ok {
			if err := c.ConvertFrom(h); err != nil {
				return err
			}
			if m, err := meta.Accessor(dst); err == nil && m.GetAnnotations() != nil {
				ann := m.GetAnnotations()
				delete(ann, conversionDataAnnotation)
				if len(ann) == 0 {
					ann = nil
				}
				m.SetAnnotations(ann)
			}
			return nil
		}
	}
	return scheme.Convert(src, dst, nil)
}

// restoresConversionData reports whether the kind's own ConvertTo restores the v1beta2 fields
// kept in the conversion-data annotation.
func restoresConversionData(gvk schema.GroupVersionKind) bool {
	obj, err := scheme.New(gvk)
	if err != nil {
		return false
	}
	_, ok := obj.(conversion.Convertible)
	return ok
}

func toMap(obj runtime.Object) (map[string]any, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}

func decodeJSON(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// normalize gives obj the shape decodeJSON gives (json.Number numbers), for callers' maps.
func normalize(obj map[string]any) map[string]any {
	raw, err := json.Marshal(obj)
	if err != nil {
		return obj
	}
	m, err := decodeJSON(raw)
	if err != nil {
		return obj
	}
	return m
}

func gvkOf(obj map[string]any) schema.GroupVersionKind {
	av, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(av)
	return gv.WithKind(kind)
}

// refVersions remembers the apiVersion of each hub-converted reference of the input, by group
// and kind, falling back to the Cluster API default.
func refVersions(gk schema.GroupKind, in map[string]any) versionOf {
	seen := map[string]string{}
	for _, r := range hubRefs[gk] {
		if ref, ok := nestedMap(in, r.From); ok {
			av, _ := ref["apiVersion"].(string)
			kind, _ := ref["kind"].(string)
			if gv, err := schema.ParseGroupVersion(av); err == nil && av != "" {
				seen[gv.Group+"/"+kind] = av
			}
		}
	}
	return func(group, kind string) string {
		if av, ok := seen[group+"/"+kind]; ok {
			return av
		}
		return defaultVersionOf(group, kind)
	}
}

// prune removes, depth first, every zero-valued field of out (false, 0, "", null, {} or []) that
// the user did not write at the same path with the same value and whose removal does not change
// the object converted back: such a field carries nothing the input said.
func prune(out, in map[string]any, at []string, baseline map[string]any, back func(map[string]any) (map[string]any, error)) {
	root := out
	var walk func(m map[string]any, at []string)
	walk = func(m map[string]any, at []string) {
		keys := sortedKeys(m)
		for _, k := range keys {
			p := append(append([]string(nil), at...), k)
			switch v := m[k].(type) {
			case map[string]any:
				walk(v, p)
			case []any:
				for i, e := range v {
					if em, ok := e.(map[string]any); ok {
						walk(em, append(append([]string(nil), p...), "["+strconv.Itoa(i)+"]"))
					}
				}
			}
			v := m[k]
			if !isZero(v) {
				continue
			}
			// Kept: a value the user wrote at the same path, and a map or list the user wrote
			// there even if the conversion emptied it (spec: {} says the object has a spec).
			if iv, ok := nested(in, p); ok && (equivalent(iv, v) || isContainer(v) && isContainer(iv)) {
				continue
			}
			delete(m, k)
			got, err := back(root)
			if err != nil || !reflect.DeepEqual(got, baseline) {
				m[k] = v
			}
		}
	}
	walk(out, at)
}

// lost lists the input's values that the round trip does not give back, as "path: value".
// Absent zero values count as kept (the typed APIs omit them), as do equal durations written
// differently (10m and 10m0s) and numbers written differently.
func lost(in, back any, at []string) []string {
	var res []string
	switch iv := in.(type) {
	case map[string]any:
		bm, _ := back.(map[string]any)
		for _, k := range sortedKeys(iv) {
			bv, ok := bm[k]
			if !ok {
				if deepZero(iv[k]) {
					continue
				}
				res = append(res, fmt.Sprintf("%s: %s has no place in %s and is dropped", joinPath(append(at, k)), short(iv[k]), TargetVersion))
				continue
			}
			res = append(res, lost(iv[k], bv, append(append([]string(nil), at...), k))...)
		}
	case []any:
		bl, _ := back.([]any)
		for i, e := range iv {
			p := append(append([]string(nil), at...), "["+strconv.Itoa(i)+"]")
			if i >= len(bl) {
				res = append(res, fmt.Sprintf("%s: %s has no place in %s and is dropped", joinPath(p), short(e), TargetVersion))
				continue
			}
			res = append(res, lost(e, bl[i], p)...)
		}
	default:
		if !equivalent(in, back) {
			res = append(res, fmt.Sprintf("%s: %s comes back as %s", joinPath(at), short(in), short(back)))
		}
	}
	return res
}

// equivalent compares two leaf values allowing for the round trip's normal forms.
func equivalent(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	if isZero(a) && isZero(b) {
		return reflect.TypeOf(a) == reflect.TypeOf(b) || a == nil || b == nil
	}
	as, aok := a.(string)
	bs, bok := b.(string)
	if aok && bok {
		da, err1 := time.ParseDuration(as)
		db, err2 := time.ParseDuration(bs)
		return err1 == nil && err2 == nil && da == db
	}
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		return err1 == nil && err2 == nil && af == bf
	}
	return false
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// deepZero reports whether v holds nothing but zero values ({nodeRegistration: {}} is empty too).
func deepZero(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			if !deepZero(e) {
				return false
			}
		}
		return true
	case []any:
		return len(t) == 0
	}
	return isZero(v)
}

func isZero(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case bool:
		return !t
	case string:
		return t == ""
	case json.Number:
		f, err := t.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func joinPath(p []string) string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// nested walks p through maps and (for "[i]" segments) lists.
func nested(obj any, p []string) (any, bool) {
	cur := obj
	for _, s := range p {
		if strings.HasPrefix(s, "[") {
			l, ok := cur.([]any)
			if !ok {
				return nil, false
			}
			i, err := strconv.Atoi(strings.Trim(s, "[]"))
			if err != nil || i < 0 || i >= len(l) {
				return nil, false
			}
			cur = l[i]
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[s]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func nestedMap(obj any, p []string) (map[string]any, bool) {
	v, ok := nested(obj, p)
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// setNested sets a map path (no list segments), creating maps on the way.
func setNested(obj map[string]any, p []string, v any) {
	cur := obj
	for _, s := range p[:len(p)-1] {
		next, ok := cur[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[s] = next
		}
		cur = next
	}
	cur[p[len(p)-1]] = v
}
