// Package templates owns `capctl generate cluster` and `generate yaml`: fetching cluster templates
// (flavors, --from, --from-config-map, ClusterClass) and rendering them with variables into
// Kubernetes objects.
//
// ClusterRequest is `generate cluster` as the user gave it; its Resolve is the one place the
// defaults are decided (namespace from the flag or the kubeconfig context, machine counts and the
// Kubernetes version from the flags, the environment or the config file, --set and --values,
// whether the management cluster is needed or only consulted), so that generating and
// --list-variables cannot disagree. GenerateCluster, ListFlavors and GenerateYAML return data;
// printing is the command's.
package templates
