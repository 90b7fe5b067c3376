// Package convert rewrites Cluster API objects written at an older API version (v1beta1, and the
// v1alpha1 IPAM and runtime kinds) as v1beta2, the API of Cluster API v1.14, without losing what
// the user wrote.
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
//
// Documents keep their order; documents that are not converted are copied byte for byte; in a
// converted document, key order, comments and scalar styles are kept wherever a field keeps its
// path.
package convert
