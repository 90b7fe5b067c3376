// Package conversion converts one Cluster API object written at an older API version (v1beta1,
// and the v1alpha1 IPAM and runtime kinds) to v1beta2, the API of Cluster API v1.14, without
// losing what the user wrote. `capctl convert` (files, documents, YAML) and `capctl move` (objects
// read from a source management cluster) both use it; neither imports the other.
//
// The field-by-field conversion is the upstream one: the conversion functions that
// sigs.k8s.io/cluster-api/api registers in a runtime.Scheme, and for the Docker provider's kinds
// (sigs.k8s.io/cluster-api/test) their own ConvertTo/ConvertFrom. For the Cluster API kinds,
// upstream leaves a few steps to the hub's ConvertTo (which lives in an internal package of the
// cluster-api module and cannot be imported): references become the v1beta2 apiGroup/kind/name
// form, and status booleans move under status.initialization. Those steps are the table in
// hub.go; nothing else is mapped by hand.
//
// What the conversion cannot keep is found, not guessed: every converted object is converted
// back to its original version and compared with the input; a value the round trip does not give
// back is reported by object and path. Zero values the converter adds (paused: false,
// exclusiveMaximum: false, creationTimestamp: null, ...) are pruned by the same test: a zero-valued
// field the user did not write is dropped when the object converted back is the same without it.
package conversion

import (
	"fmt"

	"github.com/capctl/capctl/pkg/contract"
)

// Actions of an object in a report.
const (
	// Converted: rewritten at the target version.
	Converted = "converted"
	// Unchanged: already at the target version.
	Unchanged = "unchanged"
	// PassedThrough: a Cluster API kind capctl has no conversion code for, copied as it is.
	PassedThrough = "passed through"
	// NotCAPI: not a Cluster API object, copied byte for byte.
	NotCAPI = "not Cluster API"
)

// ObjectReport is what the conversion did with one object (Line: where a file holds it).
type ObjectReport struct {
	Line      int      `json:"line"`
	Kind      string   `json:"kind"`
	Namespace string   `json:"namespace,omitempty"`
	Name      string   `json:"name"`
	From      string   `json:"from"`
	To        string   `json:"to"`
	Action    string   `json:"action"`
	Warnings  []string `json:"warnings,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Object names the object as "Kind namespace/name".
func (o ObjectReport) Object() string {
	n := o.Name
	if o.Namespace != "" {
		n = o.Namespace + "/" + n
	}
	return o.Kind + " " + n
}

// Object converts one object (a map as the API server or a file gives it) to v1beta2 when capctl
// can: it returns the object to write (the input when not converted) and the report; a converted
// object's Warnings are what the round trip does not give back, by path.
func Object(obj map[string]any) (map[string]any, ObjectReport) {
	return Decoded(normalize(obj))
}

// Decoded is Object for a map Decode gave (numbers as json.Number), without normalizing it again.
func Decoded(obj map[string]any) (map[string]any, ObjectReport) {
	gvk := gvkOf(obj)
	rep := ObjectReport{Kind: gvk.Kind, From: gvk.Version, To: gvk.Version}
	if md, ok := nestedMap(obj, path("metadata")); ok {
		rep.Name, _ = md["name"].(string)
		rep.Namespace, _ = md["namespace"].(string)
	}
	switch {
	case !contract.IsClusterAPIGroup(gvk.Group):
		rep.Action = NotCAPI
		return obj, rep
	case gvk.Version == TargetVersion:
		rep.Action = Unchanged
		return obj, rep
	case !convertible(gvk):
		rep.Action = PassedThrough
		rep.Warnings = []string{passThroughReason(gvk.Group, gvk.Version, gvk.Kind)}
		return obj, rep
	}
	res, err := convertObject(obj)
	if err != nil {
		rep.Action = PassedThrough
		rep.Error = err.Error()
		return obj, rep
	}
	rep.Action, rep.To, rep.Warnings = Converted, TargetVersion, res.Warnings
	return res.Out, rep
}

// Decode reads a JSON object the way the conversion needs it (numbers kept as json.Number).
func Decode(raw []byte) (map[string]any, error) { return decodeJSON(raw) }

func passThroughReason(group, version, kind string) string {
	return fmt.Sprintf("kept at %s: capctl has no conversion code for %s/%s %s (it converts the kinds of Cluster API and of the Docker provider); convert it with its provider's tools", version, group, version, kind)
}

// Lost lists in's values that back does not give back, as "path: value" (absent zero values,
// equal durations and numbers written differently count as kept): how a round trip, or another
// converter's output, is compared with an input.
func Lost(in, back any) []string { return lost(in, back, nil) }
