package upgrade

import (
	"context"
	"fmt"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/logging"
	"github.com/capctl/capctl/pkg/certmanager"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/install"
	"github.com/capctl/capctl/pkg/inventory"
)

// CertManagerSource gives the configured cert-manager components (`cert-manager.url`/`.version`).
type CertManagerSource interface {
	CertManager(ctx context.Context) (*certmanager.Components, error)
}

// CertManagerPlan is cert-manager's part of a plan: nil when capctl/clusterctl does not manage
// the cluster's cert-manager (it is left alone, as clusterctl does).
type CertManagerPlan = certmanager.UpgradePlan

// planCertManager decides whether cert-manager is upgraded. Only a cert-manager carrying
// clusterctl's label is considered; the configured components are fetched only then.
func planCertManager(ctx context.Context, c *cluster.Client, src CertManagerSource) (*CertManagerPlan, *certmanager.Components, error) {
	owner, err := certmanager.Owner(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	if !owner.Managed {
		return nil, nil, nil
	}
	comps, err := src.CertManager(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the configured cert-manager to compare it with the installed one: %w", err)
	}
	plan, err := certmanager.PlanUpgrade(ctx, c, comps)
	if err != nil {
		return nil, nil, err
	}
	if plan.ExternallyManaged {
		return nil, nil, nil
	}
	return plan, comps, nil
}

// upgradeCertManager does clusterctl's cert-manager upgrade: migrate the stored cert-manager
// objects to the CRDs' storage versions, delete the old objects except CRDs, Namespaces and
// webhook configurations, apply the new ones (labelled and annotated as clusterctl does) and wait
// until cert-manager accepts objects again.
func upgradeCertManager(ctx context.Context, c *cluster.Client, plan *CertManagerPlan, comps *certmanager.Components, timeout time.Duration, log *logging.Logger) error {
	log.Info("Upgrading cert-manager", "from", plan.From, "to", plan.To)
	if err := migrateCertManagerObjects(ctx, c, log); err != nil {
		return err
	}
	objs := make([]unstructured.Unstructured, len(comps.Objects))
	for i := range comps.Objects {
		objs[i] = *comps.Objects[i].DeepCopy()
	}
	certmanager.Prepare(objs, comps.Version)

	old, err := certManagerObjects(ctx, c, objs)
	if err != nil {
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
	var last error
	err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		last = certmanager.Probe(ctx, c)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("cert-manager %s does not work after the upgrade: %v", comps.Version, last)
	}
	return nil
}

// certManagerObjects lists the objects labelled clusterctl.cluster.x-k8s.io/core=cert-manager
// (kinds of the new components plus the usual ones), except what an upgrade keeps: CRDs,
// Namespaces and webhook configurations.
func certManagerObjects(ctx context.Context, c *cluster.Client, objs []unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	kinds := map[schema.GroupKind]schema.GroupVersionKind{}
	for _, gvk := range baselineKinds {
		kinds[gvk.GroupKind()] = gvk
	}
	for i := range objs {
		gvk := objs[i].GroupVersionKind()
		kinds[gvk.GroupKind()] = gvk
	}
	gks := make([]schema.GroupKind, 0, len(kinds))
	for gk := range kinds {
		switch {
		case kept(gk), gk.Group == "admissionregistration.k8s.io",
			gk.Group == "" && (gk.Kind == "Endpoints"), gk.Group == "discovery.k8s.io":
			continue
		}
		gks = append(gks, gk)
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	var out []unstructured.Unstructured
	for _, gk := range gks {
		m, err := c.Mapper.RESTMapping(gk, kinds[gk].Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("looking up kind %s: %w", gk, err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(m.GroupVersionKind.Kind + "List"))
		if err := c.List(ctx, list, client.MatchingLabels{inventory.CoreLabel: certmanager.CoreValue}); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("listing cert-manager's %s objects: %w", gk.Kind, err)
		}
		out = append(out, list.Items...)
	}
	return out, nil
}

// migrateCertManagerObjects rewrites every object of cert-manager's CRDs at the CRD's storage
// version (list with paging, update each), then sets status.storedVersions to the storage version
// only, so that a new cert-manager that drops an old version finds nothing stored in it.
func migrateCertManagerObjects(ctx context.Context, c *cluster.Client, log *logging.Logger) error {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.MatchingLabels{inventory.CoreLabel: certmanager.CoreValue}); err != nil {
		return fmt.Errorf("listing cert-manager's CRDs: %w", err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storage = v.Name
			}
		}
		if storage == "" {
			continue
		}
		if len(crd.Status.StoredVersions) == 1 && crd.Status.StoredVersions[0] == storage {
			continue // nothing stored in another version
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: crd.Spec.Names.ListKind}
		n := 0
		cont := ""
		for {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk)
			if err := c.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
				return fmt.Errorf("migrating %s: listing: %w", crd.Name, err)
			}
			for j := range list.Items {
				u := &list.Items[j]
				if err := c.Update(ctx, u); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("migrating %s %s/%s to %s: %w", crd.Spec.Names.Kind, u.GetNamespace(), u.GetName(), storage, err)
				}
				n++
			}
			cont = list.GetContinue()
			if cont == "" {
				break
			}
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
