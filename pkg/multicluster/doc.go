// Package multicluster is the one home of commands over several management clusters at once
// (--contexts a,b,c and --all-contexts): which kubeconfig contexts are chosen and the rules that
// refuse a selection (a context named twice, an unknown one, two contexts reaching the same
// cluster), connecting to them and running a command's read on each with bounded concurrency,
// the per-management-cluster summary every such view carries (reachable, contract, providers,
// clusters, problems), provider drift across them, the MANAGEMENT column and the exit code.
//
// Feature packages call Each with their own single-management-cluster function; this package
// knows nothing of what they read.
package multicluster
