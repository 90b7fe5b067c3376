// Package diagnose explains why a workload cluster is stuck: which object blocks it, since when,
// which component (provider, Deployment) is responsible, and the exact commands to run next.
//
// The work is split in two so that the rules can be tested without any API server:
//
//   - fetching (Fetch, FetchManagement, FetchWorkload) reads describe's snapshot of a cluster, the
//     management side (provider controllers, webhooks, cert-manager, contracts) and, through the
//     cluster's kubeconfig Secret, the workload cluster itself (Nodes, CNI, PDBs), read only;
//   - NewInput turns the snapshot into the rules' Input (describe's tree plus the Machine and
//     Cluster fields the tree leaves out: phase, nodeRef, providerID, control-plane endpoint), and
//     Run applies the rules table (rules.go) to it and returns a Report; neither makes a request.
//
// `diagnose clusters` (Clusters) reads the whole fleet's snapshots in one list per kind
// (describe.FetchFleet) and reads only the workload clusters whose management-side state needs
// them (Input.NeedsWorkload), each within its time budget.
//
// Every rule is one row of the table: its id, a predicate over the Input, a one-sentence
// explanation, the component responsible and templates of the commands to run next.
package diagnose
