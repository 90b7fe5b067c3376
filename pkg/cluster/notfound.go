package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/contract"
)

// ClusterGroupKind is Cluster API's Cluster kind.
var ClusterGroupKind = schema.GroupKind{Group: contract.Group, Kind: "Cluster"}

// ClusterNotFoundError says a Cluster API Cluster does not exist: which clusters do exist in its
// namespace, and which other namespaces hold a cluster of that name. Every command that looks a
// Cluster up by name (describe, get kubeconfig, ...) returns this one type.
type ClusterNotFoundError struct {
	Namespace, Name string
	// Existing are the clusters in Namespace, sorted.
	Existing []string
	// ElsewhereIn are other namespaces that have a Cluster of that name.
	ElsewhereIn []string
}

func (e *ClusterNotFoundError) Error() string {
	msg := fmt.Sprintf("cluster %q not found in namespace %q", e.Name, e.Namespace)
	if len(e.Existing) == 0 {
		msg += ": there are no clusters in that namespace"
	} else {
		msg += "; clusters there: " + strings.Join(e.Existing, ", ")
	}
	if len(e.ElsewhereIn) > 0 {
		quoted := make([]string, len(e.ElsewhereIn))
		for i, ns := range e.ElsewhereIn {
			quoted[i] = fmt.Sprintf("%q", ns)
		}
		return msg + fmt.Sprintf("; a cluster of that name exists in namespace %s: pass -n %s", strings.Join(quoted, ", "), e.ElsewhereIn[0])
	}
	return msg + "; pass -n NAMESPACE to look elsewhere (or list them all with `capctl describe clusters -A`)"
}

// NamespacesWithCluster returns the namespaces holding a Cluster named name (one metadata-only
// LIST across namespaces), sorted; nil when that cannot be read (for example, RBAC limited to a
// namespace), since it only improves an error message.
func NamespacesWithCluster(ctx context.Context, c client.Reader, mapper meta.RESTMapper, name string) []string {
	mapping, err := mapper.RESTMapping(ClusterGroupKind)
	if err != nil {
		return nil
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind("ClusterList"))
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	var out []string
	for _, it := range list.Items {
		if it.Name == name {
			out = append(out, it.Namespace)
		}
	}
	sort.Strings(out)
	return out
}
