// Package describe owns `capctl describe`: building the object tree of a workload cluster with its
// conditions from a management cluster, and rendering it as a tree, table, JSON or YAML.
package describe
