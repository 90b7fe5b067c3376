// Package diagnose explains why a workload cluster is stuck: which object blocks it, since when,
// which component (provider, Deployment) is responsible, and the exact commands to run next.
//
// The work is split in two so that the rules can be tested without any API server:
//
//   - fetching (Fetch, FetchManagement, FetchWorkload) reads the describe tree of a cluster, a few
//     fields describe does not keep (machine phase, nodeRef, providerID, control-plane endpoint),
//     the management side (provider controllers, webhooks, cert-manager, contracts) and, through
//     the cluster's kubeconfig Secret, the workload cluster itself (Nodes, CNI, PDBs), read only;
//   - Run applies the rules table (rules.go) to that Input and returns a Report.
//
// Every rule is one row of the table: its id, a predicate over the Input, a one-sentence
// explanation, the component responsible and templates of the commands to run next.
package diagnose
