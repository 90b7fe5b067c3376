package contract

import "strings"

// Group is Cluster API's core API group (Cluster, Machine, ClusterClass, ...), the one constant
// every package names it by. A unit test holds it equal to the Cluster API module's own
// GroupVersion, so a renamed group cannot go unnoticed.
const Group = "cluster.x-k8s.io"

// IsClusterAPIGroup tells whether an API group belongs to Cluster API or one of its providers:
// the core group or a subgroup of it (bootstrap., controlplane., infrastructure., addons., ...).
// A group that merely ends in the same letters ("examplecluster.x-k8s.io") does not.
func IsClusterAPIGroup(group string) bool {
	return group == Group || strings.HasSuffix(group, "."+Group)
}
