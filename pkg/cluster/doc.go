// Package cluster owns the connection to a management cluster: kubeconfig and context loading, one
// controller-runtime client with one cached REST mapper per run, the reachability check, and counting
// of API requests (for benchmarks and tests).
package cluster
