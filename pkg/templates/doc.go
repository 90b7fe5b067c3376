// Package templates owns `capctl generate cluster` and `generate yaml`: fetching cluster templates
// (flavors, --from, ClusterClass) and rendering them with variables into Kubernetes objects.
package templates
