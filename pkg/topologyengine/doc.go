// Package topologyengine runs Cluster API's own topology code in-process, against a management
// cluster read through a view in which planned (changed or new) objects replace the live ones.
//
// It is the one capctl package that imports the topology controller's unstable upstream paths
// (sigs.k8s.io/cluster-api/exp/topology/..., core/reconcilers/topology/cluster/structuredmerge,
// core/webhooks/admission, core/reconcilers/machinedeployment/mdutil), so a move upstream touches
// only this package.
//
// What is upstream's and what is capctl's:
//   - the desired state is upstream's generator (desiredstate.Generator), as the v1.14 topology
//     controller runs it; the changes are upstream's server-side-apply dry-run patch helper; a
//     MachineDeployment's rollout is upstream's mdutil.MachineTemplateUpToDate; the admission
//     checks are upstream's webhooks, called in-process;
//   - reading the blueprint and the current state is capctl's (upstream keeps those reads
//     unexported in the controller), as are the control plane's rollout rule (the
//     KubeadmControlPlane's is internal upstream) and the ClusterClass variables status (the
//     ClusterClass controller's, for a class that exists only in the planned files).
//
// Nothing here writes: every client handed to upstream code refuses writes that are not dry runs.
package topologyengine
