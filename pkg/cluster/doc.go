// Package cluster owns the connection to a management cluster: kubeconfig and context loading, one
// controller-runtime client with one cached REST mapper per run, the reachability check, and counting
// of API requests (for benchmarks and tests).
//
// It is also capctl's one home for waiting and retrying (wait.go, retry.go, crd.go): Poll and
// Sleep; IsTransient, the rule for which failed requests are worth sending again; Backoff and
// Retry; and the CRD waits (Established, served) built on them.
package cluster
