// Package kubeconfig owns `capctl get kubeconfig`: reading a workload cluster's kubeconfig from
// the Secret Cluster API writes for it, with errors that say what is missing.
package kubeconfig
