// Package inventory reads and writes clusterctl's provider inventory: the Provider CRD
// (clusterctl.cluster.x-k8s.io/v1alpha3) and one Provider object per installed provider, named and
// labelled exactly as clusterctl does so both tools share a management cluster. The CRD carries
// only clusterctl's clusterctl.cluster.x-k8s.io/core=inventory label: the clusterctl.cluster.x-k8s.io
// label would make clusterctl move carry the inventory.
package inventory
