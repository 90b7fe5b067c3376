package describe

import (
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Condition is one status condition of an object, in either API generation: v1beta2 conditions
// (metav1.Condition: no severity) and the deprecated v1beta1 ones (with severity) share this shape.
type Condition struct {
	Type               string    `json:"type"`
	Status             string    `json:"status"`
	Severity           string    `json:"severity,omitempty"`
	Reason             string    `json:"reason,omitempty"`
	Message            string    `json:"message,omitempty"`
	LastTransitionTime time.Time `json:"lastTransitionTime,omitzero"`
}

// Condition types that describe reads. Negative-polarity types are "normal" when False.
const (
	availableCondition = "Available"
	readyCondition     = "Ready"
	upToDateCondition  = "UpToDate"
)

var negativePolarity = map[string]bool{
	"Paused": true, "Deleting": true, "RollingOut": true, "ScalingUp": true, "ScalingDown": true,
	"Updating": true, "Remediating": true,
}

func findCondition(cs []Condition, t string) *Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// isLegacyVersion tells whether an API version predates v1beta2 (so its status.conditions are
// v1beta1 conditions and its v1beta2 data, if any, lives under status.v1beta2).
func isLegacyVersion(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return false
	}
	return gv.Version == "v1beta1" || strings.HasPrefix(gv.Version, "v1alpha")
}

// v1beta2Conditions reads the v1beta2 conditions of any object, wherever its API version keeps
// them: status.v1beta2.conditions (v1beta1 objects that carry the new conditions), else
// status.conditions (v1beta2 objects; for old objects a best-effort reading, as clusterctl does).
func v1beta2Conditions(u *unstructured.Unstructured) []Condition {
	if cs, ok := nestedSlice(u.Object, "status", "v1beta2", "conditions"); ok {
		return parseConditions(cs, false)
	}
	if cs, ok := nestedSlice(u.Object, "status", "conditions"); ok {
		return parseConditions(cs, false)
	}
	return nil
}

// v1beta1Conditions reads the deprecated v1beta1 conditions (with severity):
// status.deprecated.v1beta1.conditions on v1beta2 objects, status.conditions on v1beta1 objects.
func v1beta1Conditions(u *unstructured.Unstructured) []Condition {
	if cs, ok := nestedSlice(u.Object, "status", "deprecated", "v1beta1", "conditions"); ok {
		return parseConditions(cs, true)
	}
	_, hasV1beta2 := nestedMap(u.Object, "status", "v1beta2")
	if isLegacyVersion(u.GetAPIVersion()) || hasV1beta2 {
		if cs, ok := nestedSlice(u.Object, "status", "conditions"); ok {
			return parseConditions(cs, true)
		}
	}
	return nil
}

func parseConditions(items []any, withSeverity bool) []Condition {
	out := make([]Condition, 0, len(items))
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		c := Condition{
			Type:    str(m["type"]),
			Status:  str(m["status"]),
			Reason:  str(m["reason"]),
			Message: str(m["message"]),
		}
		if withSeverity {
			c.Severity = str(m["severity"])
		}
		if ts := str(m["lastTransitionTime"]); ts != "" {
			if t, err := time.Parse(time.RFC3339, ts); err == nil {
				c.LastTransitionTime = t
			}
		}
		if c.Type == "" {
			continue
		}
		out = append(out, c)
	}
	return out
}

func sortedByType(cs []Condition) []Condition {
	out := append([]Condition(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// --- tolerant accessors over unstructured.Nested*: a missing or mistyped field is simply absent ---

func str(v any) string {
	s, _ := v.(string)
	return s
}

func nestedMap(obj map[string]any, path ...string) (map[string]any, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	m, isMap := v.(map[string]any)
	return m, ok && isMap
}

func nestedSlice(obj map[string]any, path ...string) ([]any, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	s, isSlice := v.([]any)
	return s, ok && isSlice
}

func nestedString(obj map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(obj, path...)
	return s
}

func nestedBool(obj map[string]any, path ...string) bool {
	b, _, _ := unstructured.NestedBool(obj, path...)
	return b
}

// nestedInt reads an integer field. The API server's JSON decodes numbers as int64, but objects
// read from YAML files or built in tests may hold int or float64, so all are accepted.
func nestedInt(obj map[string]any, path ...string) *int32 {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !ok {
		return nil
	}
	var n int32
	switch x := v.(type) {
	case int64:
		n = int32(x)
	case int32:
		n = x
	case int:
		n = int32(x)
	case float64:
		n = int32(x)
	default:
		return nil
	}
	return &n
}

// firstInt returns the first of several paths that is set.
func firstInt(obj map[string]any, paths ...[]string) *int32 {
	for _, p := range paths {
		if v := nestedInt(obj, p...); v != nil {
			return v
		}
	}
	return nil
}

// ref is a reference from one object to another, in either API generation: v1beta2 references
// name a group and kind (the version comes from the CRD's contract label), v1beta1 ones carry a
// full apiVersion.
type ref struct {
	Group, Version, Kind, Namespace, Name string
}

func (r ref) gk() schema.GroupKind { return schema.GroupKind{Group: r.Group, Kind: r.Kind} }

func (r ref) defined() bool { return r.Kind != "" && r.Name != "" }

func readRef(obj map[string]any, namespace string, path ...string) ref {
	m, ok := nestedMap(obj, path...)
	if !ok {
		return ref{}
	}
	r := ref{Kind: str(m["kind"]), Name: str(m["name"]), Namespace: str(m["namespace"])}
	if av := str(m["apiVersion"]); av != "" {
		if gv, err := schema.ParseGroupVersion(av); err == nil {
			r.Group, r.Version = gv.Group, gv.Version
		}
	} else {
		r.Group = str(m["apiGroup"])
	}
	if r.Namespace == "" {
		r.Namespace = namespace
	}
	return r
}

// controllerOf returns the controller owner reference of an object, if any.
func controllerOf(u *unstructured.Unstructured) *metav1.OwnerReference {
	for _, o := range u.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			o := o
			return &o
		}
	}
	return nil
}

// controlledBy tells whether u's controller is the object of the given group, kind and name.
func controlledBy(u *unstructured.Unstructured, group, kind, name string) bool {
	o := controllerOf(u)
	if o == nil || o.Kind != kind || o.Name != name {
		return false
	}
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	return err == nil && gv.Group == group
}
