// Package describe owns `capctl describe`: the object tree of a workload cluster with its
// conditions, and the fleet summary.
//
// Reading and building are separate steps: Fetch reads a Snapshot of the cluster (one LIST per
// kind and namespace, referenced objects in bulk, so requests do not grow with the machines), and
// Build turns a snapshot into a Tree without any request (presentation options, echo and
// grouping rules, the --show-conditions check). Render prints a tree as clusterctl's aligned
// table; structured output (-o json|yaml) is the caller's, through internal/output.
package describe
