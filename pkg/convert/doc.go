// Package convert is `capctl convert`: it rewrites the Cluster API objects of YAML files written
// at an older API version (v1beta1, and the v1alpha1 IPAM and runtime kinds) as v1beta2, the API
// of Cluster API v1.14, one object at a time through pkg/conversion (which says how, and how a
// loss is found rather than guessed).
//
// Documents keep their order; documents that are not converted are copied byte for byte; in a
// converted document, key order, comments and scalar styles are kept wherever a field keeps its
// path. A v1 List (kubectl get -o yaml) has its Cluster API items converted and its other items
// kept.
package convert
