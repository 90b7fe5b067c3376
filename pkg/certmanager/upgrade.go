package certmanager

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
)

// Plan decides whether cert-manager is upgraded. Only a cert-manager capctl/clusterctl installed
// (Owner's Managed) is considered; the configured components are fetched only then. It returns
// nil (and no components) when cert-manager is left alone.
func Plan(ctx context.Context, c *cluster.Client, fetch func(context.Context) (*Components, error)) (*UpgradePlan, *Components, error) {
	owner, err := Owner(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if !owner.Managed {
		return nil, nil, nil
	}
	comps, err := fetch(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the configured cert-manager to compare it with the installed one: %w", err)
	}
	plan, err := PlanUpgrade(ctx, c, comps)
	if err != nil {
		return nil, nil, err
	}
	if plan.ExternallyManaged {
		return nil, nil, nil
	}
	return plan, comps, nil
}

// Upgrade does clusterctl's cert-manager upgrade: migrate the stored cert-manager objects to the
// CRDs' storage versions, delete the old objects except CRDs, Namespaces and webhook
// configurations, apply the new ones (labelled and annotated as clusterctl does) and wait until
// cert-manager accepts objects again.
func Upgrade(ctx context.Context, c *cluster.Client, plan *UpgradePlan, comps *Components, timeout time.Duration, log *logging.Logger) error {
	if log == nil {
		log = logging.Discard()
	}
	log.Info("Upgrading cert-manager", "from", plan.From, "to", plan.To)
	objs := make([]unstructured.Unstructured, len(comps.Objects))
	for i := range comps.Objects {
		objs[i] = *comps.Objects[i].DeepCopy()
	}
	Prepare(objs, comps.Version)

	// Listed before the first write (the migration): an incomplete listing is refused unchanged.
	old, err := install.ListInstalled(ctx, c, install.ListInstalledOptions{
		What:     "cert-manager",
		Selector: []client.ListOption{client.MatchingLabels{inventory.CoreLabel: CoreValue}},
		Skip:     keptOnUpgrade,
		Command:  "capctl upgrade apply",
	}, objs)
	if err != nil {
		return err
	}
	if err := migrateObjects(ctx, c, log); err != nil {
		return err
	}
	for i := range old {
		u := &old[i]
		if err := c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("upgrading cert-manager: deleting %s: %w", install.RefOf(u), err)
		}
	}
	if _, err := install.Apply(ctx, c, objs, install.ApplyOptions{Source: "cert-manager " + comps.Version, Log: log.V(1)}); err != nil {
		return fmt.Errorf("upgrading cert-manager to %s: %w", comps.Version, err)
	}
	log.Info("Waiting for cert-manager to be available...")
	if err := waitProbe(ctx, c, probeWait{objs: objs, timeout: timeout, interval: time.Second, log: log}); err != nil {
		return fmt.Errorf("cert-manager %s does not work after the upgrade: %w", comps.Version, err)
	}
	return nil
}

// keptOnUpgrade are the cert-manager kinds an upgrade never deletes: CRDs (their objects would go
// with them), Namespaces, webhook configurations and the endpoints Kubernetes manages.
func keptOnUpgrade(gk schema.GroupKind) bool {
	switch {
	case gk.Group == "apiextensions.k8s.io" && gk.Kind == "CustomResourceDefinition",
		gk.Group == "" && (gk.Kind == "Namespace" || gk.Kind == "Endpoints"),
		gk.Group == "admissionregistration.k8s.io", gk.Group == "discovery.k8s.io":
		return true
	}
	return false
}

// migrateObjects rewrites every object of cert-manager's CRDs at the CRD's storage version (list
// with paging, update each), then sets status.storedVersions to the storage version only, so that
// a new cert-manager that drops an old version finds nothing stored in it.
func migrateObjects(ctx context.Context, c *cluster.Client, log *logging.Logger) error {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.MatchingLabels{inventory.CoreLabel: CoreValue}); err != nil {
		return fmt.Errorf("listing cert-manager's CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		storage := contract.StorageVersion(crd)
		if storage == "" {
			continue
		}
		if len(crd.Status.StoredVersions) == 1 && crd.Status.StoredVersions[0] == storage {
			continue // nothing stored in another version
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: crd.Spec.Names.Kind}
		n := 0
		// A listing that starts again rewrites what it already rewrote: the same bytes, harmless.
		err := cluster.ListPages(ctx, c, gvk, 500, func(items []unstructured.Unstructured, _ bool) error {
			for j := range items {
				u := &items[j]
				if err := c.Update(ctx, u); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("migrating %s %s/%s to %s: %w", crd.Spec.Names.Kind, u.GetNamespace(), u.GetName(), storage, err)
				}
				n++
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("migrating %s: %w", crd.Name, err)
		}
		patch := client.MergeFrom(crd.DeepCopy())
		crd.Status.StoredVersions = []string{storage}
		if err := c.Status().Patch(ctx, crd, patch); err != nil {
			return fmt.Errorf("migrating %s: setting status.storedVersions to %s: %w", crd.Name, storage, err)
		}
		log.V(1).Info("Migrated cert-manager objects", "crd", crd.Name, "objects", n, "storageVersion", storage)
	}
	return nil
}
