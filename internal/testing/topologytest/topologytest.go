// Package topologytest stands in for the topology controller's first reconcile on API servers
// that run no controllers (integration tests and benchmarks): it applies the desired state
// upstream's generator computes (pkg/topologyengine), with the controller's field manager, so
// the Clusters look as the controller leaves them: their objects, and the Cluster's
// observedGeneration and TopologyReconciled condition (nothing here runs machines).
package topologytest

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
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
		if err := markReconciled(ctx, live, client.ObjectKeyFromObject(cl)); err != nil {
			return fmt.Errorf("Cluster %s: %w", cl.Name, err)
		}
	}
	return nil
}

// markReconciled writes what the topology controller writes after a reconcile that succeeded:
// the Cluster's observedGeneration and its TopologyReconciled condition, True.
func markReconciled(ctx context.Context, c client.Client, key client.ObjectKey) error {
	cl := &clusterv1.Cluster{}
	if err := c.Get(ctx, key, cl); err != nil {
		return err
	}
	before := cl.DeepCopy()
	cl.Status.ObservedGeneration = cl.Generation
	conditions.Set(cl, metav1.Condition{Type: clusterv1.ClusterTopologyReconciledCondition, Status: metav1.ConditionTrue,
		Reason: clusterv1.ClusterTopologyReconcileSucceededReason, ObservedGeneration: cl.Generation})
	return c.Status().Patch(ctx, cl, client.MergeFrom(before))
}
