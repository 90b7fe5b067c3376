// Package inventory reads and writes clusterctl's provider inventory: the Provider CRD
// (clusterctl.cluster.x-k8s.io/v1alpha3) and one Provider object per installed provider, named and
// labelled exactly as clusterctl does so both tools share a management cluster.
package inventory
