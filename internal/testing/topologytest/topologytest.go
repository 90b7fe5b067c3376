// Package topologytest stands in for the topology controller's first reconcile on API servers
// that run no controllers (integration tests and benchmarks): it applies the desired state
// upstream's generator computes (pkg/topologyengine), with the controller's field manager, so
// the Clusters look as the controller leaves them (no status: nothing here runs machines).
package topologytest

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/topologyengine"
)

// fieldManager is the topology controller's field manager (upstream's TopologyManagerName).
const fieldManager = "capi-topology"

// Reconcile applies the desired state of every Cluster with a topology in namespace ns.
func Reconcile(ctx context.Context, c *cluster.Client, ns string) error {
	live, err := client.New(c.Config, client.Options{Scheme: topologyengine.Scheme(), Mapper: c.Mapper})
	if err != nil {
		return err
	}
	eng, err := topologyengine.New(ctx, live, nil)
	if err != nil {
		return err
	}
	list := &clusterv1.ClusterList{}
	if err := live.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range list.Items {
		cl := &list.Items[i]
		objs, err := eng.Desired(ctx, cl)
		if err != nil {
			return fmt.Errorf("Cluster %s: %w", cl.Name, err)
		}
		for _, o := range objs {
			u := &unstructured.Unstructured{}
			if err := live.Scheme().Convert(o, u, nil); err != nil {
				return err
			}
			if u.GetKind() == "" {
				gvk, err := live.GroupVersionKindFor(o)
				if err != nil {
					return err
				}
				u.SetGroupVersionKind(gvk)
			}
			u.SetResourceVersion("")
			u.SetManagedFields(nil)
			if err := live.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
				return fmt.Errorf("Cluster %s: applying %s %s: %w", cl.Name, u.GetKind(), u.GetName(), err)
			}
		}
	}
	return nil
}
